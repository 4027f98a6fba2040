// Package gobuild builds this module's commands (switchboard, the test
// server) for the tests and benchmarks that run them as real processes.
package gobuild

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

// Build builds the main package pkg, a path relative to the module root
// such as "./cmd/switchboard", into the file out (made absolute), and
// returns out's absolute path.
func Build(pkg, out string) (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	if out, err = filepath.Abs(out); err != nil {
		return "", err
	}
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
	}
	return out, nil
}

// ModuleRoot finds the directory holding go.mod: first by asking the go
// command about the working directory (go test runs in the package's
// directory, sbbench in the repository), then by walking up from this
// source file.
func ModuleRoot() (string, error) {
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

// Once builds one binary the first time it is asked for, into a temporary
// directory shared by the whole process (not a test's TempDir, which would
// vanish with that test). Its zero value is not usable: set Pkg and Name.
type Once struct {
	Pkg  string // main package, relative to the module root
	Name string // file name of the binary

	once sync.Once
	dir  string
	path string
	err  error
}

// Path returns the binary's absolute path, building it on the first call.
func (o *Once) Path() (string, error) {
	o.once.Do(func() {
		if o.dir, o.err = os.MkdirTemp("", o.Name+"-bin-"); o.err == nil {
			// Open to every user, as an installed program is: a root
			// Switchboard runs its sandboxed servers as an unprivileged
			// user, which must be able to enter the directory that a
			// derived mount shows it.
			if o.err = os.Chmod(o.dir, 0o755); o.err == nil {
				o.path, o.err = Build(o.Pkg, filepath.Join(o.dir, o.Name))
			}
		}
	})
	return o.path, o.err
}

// Remove deletes the binary and its directory, if built. No one may run it
// afterwards (it is meant for TestMain, after m.Run).
func (o *Once) Remove() {
	if o.dir != "" {
		_ = os.RemoveAll(o.dir)
	}
}
