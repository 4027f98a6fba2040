#!/usr/bin/env bash
# Runs every Go fuzz target of Switchboard for SECONDS each (default 10),
# one after another, and stops at the first failure. A failing input is
# written by go test to the package's testdata/fuzz/FuzzName/ directory;
# rerun it with `go test -run=FuzzName/ID ./pkg`.
#
#     scripts/fuzz.sh        # 10 s per target
#     scripts/fuzz.sh 5      # 5 s per target (the short run of the test command)
#
# The committed seed corpora (testdata/fuzz/...) also run, without fuzzing,
# in every plain `go test`.
#
# Go 1.26's fuzz coordinator can report a bare "context deadline exceeded"
# when -fuzztime ends while a worker is mid-input (golang/go#75804, fixed in
# Go 1.27). Such a run wrote no failing input and found nothing; this script
# then replays the target's corpus without fuzzing and, if that passes,
# counts the run as done rather than failed.
set -euo pipefail
cd "$(dirname "$0")/.."

secs="${1:-10}"
if ! [[ "$secs" =~ ^[0-9]+$ ]] || [[ "$secs" -eq 0 ]]; then
	echo "usage: scripts/fuzz.sh [SECONDS]   (a positive whole number; default 10)" >&2
	exit 2
fi

# target package
targets=(
	"FuzzValidateConfig ."
	"FuzzMatchPattern ."
	"FuzzValidateToolset ."
	"FuzzParseAddress ./executor"
	"FuzzAggregateName ./gateway"
	"FuzzAPIRequestBodies ./httpapi"
	"FuzzMembers ./internal/rawjson"
	"FuzzDecode ./internal/rawjson"
	"FuzzAppendString ./internal/rawjson"
	"FuzzRelayEnvelope ./gateway"
	"FuzzStatelessResult ./gateway"
	"FuzzQuickSchema ./upstream"
	"FuzzTakeResult ./upstream"
)

log="$(mktemp)"
trap 'rm -f "$log"' EXIT

for entry in "${targets[@]}"; do
	read -r name pkg <<<"$entry"
	corpus="$pkg/testdata/fuzz/$name"
	before="$(ls "$corpus" 2>/dev/null || true)"
	echo "== $name ($pkg, ${secs}s)"
	status=0
	go test -run='^$' -fuzz="^${name}\$" -fuzztime="${secs}s" "$pkg" 2>&1 | tee "$log" || status=$?
	[[ "$status" -eq 0 ]] && continue

	after="$(ls "$corpus" 2>/dev/null || true)"
	# The coordinator's own deadline race: the failure is that one line,
	# and no failing input was written.
	if [[ "$before" == "$after" ]] &&
		grep -A1 -E "^--- FAIL: ${name} " "$log" | tail -n 1 | grep -qx '    context deadline exceeded'; then
		echo "fuzz.sh: $name: the fuzz coordinator's deadline race (golang/go#75804), no failing input; replaying the corpus"
		if go test -run="^${name}\$" "$pkg"; then
			continue
		fi
	fi
	echo "fuzz.sh: $name in $pkg failed; a failing input, if one was found, is in $corpus/" >&2
	exit 1
done
echo "== every fuzz target ran ${secs}s without a failure"
