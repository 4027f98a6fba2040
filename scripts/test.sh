#!/usr/bin/env bash
# Runs every test of Switchboard: go vet, then the whole suite under the race
# detector. Tests start real processes and real HTTP servers on 127.0.0.1;
# they need nothing but Go (the fault-injecting test server is built from
# this repository by the tests themselves).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== go vet"
go vet ./...

echo "== go test -race"
go test -race -count=1 -timeout 15m ./...
