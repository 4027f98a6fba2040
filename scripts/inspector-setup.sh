#!/usr/bin/env bash
# Prepares the MCP Inspector test (cmd/switchboard, TestInspectorListsAToolset):
# installs the MCP Inspector, @modelcontextprotocol/inspector, from npm into a
# cache outside the repository. Idempotent: a cache at the right version is
# reused.
#
#   source scripts/inspector-setup.sh     # exports the variable below
#   eval "$(scripts/inspector-setup.sh)"  # the same from a script
#
# Exports:
#   SWITCHBOARD_INSPECTOR_BIN   the inspector's launcher (mcp-inspector;
#                               "--cli URL --transport http --method
#                               tools/list" lists a server's tools)
#
# Needs node (>= 18) and npm. The cache is $SWITCHBOARD_INSPECTOR_CACHE,
# else $XDG_CACHE_HOME/switchboard-inspector, else
# ~/.cache/switchboard-inspector. Progress goes to stderr; when run (not
# sourced), the export line goes to stdout.

_sb_inspector_setup() {
	# The newest release without a Node 22 requirement (0.16 and later
	# want node >= 22.7.5); its CLI speaks Streamable HTTP (--transport http).
	local version=0.15.0
	local pkg=@modelcontextprotocol/inspector
	local cache tool installed

	cache="${SWITCHBOARD_INSPECTOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/switchboard-inspector}"
	for tool in node npm; do
		if ! command -v "$tool" >/dev/null 2>&1; then
			echo "inspector-setup: $tool not found on PATH; the inspector test needs node and npm" >&2
			return 1
		fi
	done
	mkdir -p "$cache" || return 1
	installed="$(node -p 'require(process.argv[1]).version' "$cache/node_modules/$pkg/package.json" 2>/dev/null || true)"
	if [ "$installed" != "$version" ]; then
		echo "inspector-setup: installing $pkg@$version into $cache" >&2
		npm install --no-audit --no-fund --save-exact --prefix "$cache" "$pkg@$version" >&2 || {
			echo "inspector-setup: npm install $pkg@$version failed" >&2
			return 1
		}
	fi
	if [ ! -x "$cache/node_modules/.bin/mcp-inspector" ]; then
		echo "inspector-setup: $cache/node_modules/.bin/mcp-inspector is missing after the install" >&2
		return 1
	fi
	export SWITCHBOARD_INSPECTOR_BIN="$cache/node_modules/.bin/mcp-inspector"
	echo "inspector-setup: $pkg@$version is ready in $cache" >&2
}

if [ "${BASH_SOURCE[0]}" != "$0" ]; then
	# Sourced: export into the caller's shell, without changing its options.
	if _sb_inspector_setup; then
		unset -f _sb_inspector_setup
		printf 'SWITCHBOARD_INSPECTOR_BIN=%s\n' "$SWITCHBOARD_INSPECTOR_BIN" >&2
		return 0
	fi
	unset -f _sb_inspector_setup
	return 1
fi

set -uo pipefail
_sb_inspector_setup || exit 1
printf 'export SWITCHBOARD_INSPECTOR_BIN=%q\n' "$SWITCHBOARD_INSPECTOR_BIN"
