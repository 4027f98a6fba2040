package daemontest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// mainPackage is switchboard's main package, relative to the module root.
const mainPackage = "./cmd/switchboard"

// Build builds the switchboard binary of the module that holds the working
// directory (or, failing that, this source file) with "go build", as
// dir/switchboard, and returns its absolute path. The caller owns dir.
func Build(dir string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	path, err := filepath.Abs(filepath.Join(dir, "switchboard"))
	if err != nil {
		return "", err
	}
	cmd := exec.Command("go", "build", "-o", path, mainPackage)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", mainPackage, err, out)
	}
	return path, nil
}

// moduleRoot finds the directory holding go.mod: first by asking the go
// command about the working directory (go test runs in the package's
// directory, sbbench in the repository), then by walking up from this
// source file.
func moduleRoot() (string, error) {
	if out, err := exec.Command("go", "env", "GOMOD").Output(); err == nil {
		gomod := strings.TrimSpace(string(out))
		if gomod != "" && gomod != os.DevNull {
			return filepath.Dir(gomod), nil
		}
	}
	_, file, _, ok := runtime.Caller(0)
	if ok && filepath.IsAbs(file) {
		for dir := filepath.Dir(file); ; dir = filepath.Dir(dir) {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				return dir, nil
			}
			if parent := filepath.Dir(dir); parent == dir {
				break
			}
		}
	}
	return "", errors.New("cannot find the module root (go.mod)")
}
