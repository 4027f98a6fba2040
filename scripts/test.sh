#!/usr/bin/env bash
# Runs every test of Switchboard: go vet, then the whole suite under the race
# detector. Tests start real processes, real HTTP servers on 127.0.0.1 and a
# real PostgreSQL; this script installs and starts what they need (the
# fault-injecting test server is built from this repository by the tests
# themselves).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== PostgreSQL (for the store and API tests)"
# Installs Debian's postgresql if missing, starts a throwaway server as the
# postgres user on 127.0.0.1, exports SWITCHBOARD_TEST_POSTGRES, and stops
# it when this script exits.
source scripts/start-postgres.sh

echo "== MCP conformance suite (npm) and the go-sdk's everything-server"
# Installs @modelcontextprotocol/conformance@0.1.12 into a cache outside the
# repository, builds the everything-server, and exports their paths for
# conformance/ (which compares the suite's results directly and through
# Switchboard's /mcp/{name}).
source scripts/conformance-setup.sh

echo "== MCP Inspector (npm), for the test that its CLI lists a toolset's tools"
source scripts/inspector-setup.sh

echo "== chromium (for the web page's browser tests)"
# Installs Debian's chromium if missing and exports SWITCHBOARD_CHROMIUM.
source scripts/web-setup.sh

echo "== bubblewrap and the npm servers the sandbox tests run (sandbox-setup.sh)"
source scripts/sandbox-setup.sh

echo "== go vet, gofmt and staticcheck (staticcheck.conf says which checks)"
go vet ./...
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
	echo "gofmt would change:" >&2
	echo "$unformatted" >&2
	exit 1
fi
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

echo "== go test -race"
go test -race -count=1 -timeout 15m ./...

echo "== fuzz targets, 5 s each"
./scripts/fuzz.sh 5
