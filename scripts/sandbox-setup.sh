#!/usr/bin/env bash
# Prepares the sandbox tests (sandbox/, upstream/, registry/): installs
# bubblewrap, slirp4netns and nftables where missing, makes /dev/net/tun
# usable by every user (as distributions ship it), and installs the npm
# servers the tests run sandboxed, @modelcontextprotocol/server-memory,
# @modelcontextprotocol/server-filesystem and
# @modelcontextprotocol/server-everything, into a cache outside the
# repository (a project of its own: the tests run them from its
# node_modules/.bin links, as a project-local install is run). Idempotent: a cache at the right versions is reused.
#
#   source scripts/sandbox-setup.sh     # exports the variables below
#   eval "$(scripts/sandbox-setup.sh)"  # the same from a script
#   go test ./sandbox/ ./upstream/ ./registry/ -run Sandbox -v
#
# Exports:
#   SWITCHBOARD_SANDBOX_REQUIRED  1: the sandbox tests fail, not skip,
#                                 when bubblewrap does not work
#   SWITCHBOARD_SANDBOX_NPM       the directory whose node_modules holds
#                                 the servers
#
# Needs apt-get (when a package is missing; run as root), node (>= 18) and
# npm. The cache is $SWITCHBOARD_SANDBOX_CACHE, else
# $XDG_CACHE_HOME/switchboard-sandbox, else ~/.cache/switchboard-sandbox.
# Progress goes to stderr; when run (not sourced), the export lines go to
# stdout.

_sb_sandbox_setup() {
	local version=2026.8.31 # of every server
	local cache pkg installed tool

	# bubblewrap; slirp4netns, the user-mode network of sandboxes with
	# network on; nftables (nft), which enforces a network allowlist.
	local missing=""
	command -v bwrap >/dev/null 2>&1 || missing="$missing bubblewrap"
	command -v slirp4netns >/dev/null 2>&1 || missing="$missing slirp4netns"
	command -v nft >/dev/null 2>&1 || [ -x /usr/sbin/nft ] || missing="$missing nftables"
	if [ -n "$missing" ]; then
		if ! command -v apt-get >/dev/null 2>&1; then
			echo "sandbox-setup: missing$missing and there is no apt-get to install them" >&2
			return 1
		fi
		echo "sandbox-setup: installing$missing" >&2
		local sudo=""
		[ "$(id -u)" -ne 0 ] && sudo="sudo"
		# shellcheck disable=SC2086
		{ $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing; } >&2 || {
			echo "sandbox-setup: apt-get install$missing failed" >&2
			return 1
		}
	fi
	# slirp4netns opens /dev/net/tun as the sandbox's user; distributions
	# ship it 0666, some containers 0600 (the tests run sandboxes as nobody).
	if [ -c /dev/net/tun ] && [ "$(id -u)" -eq 0 ]; then
		chmod 0666 /dev/net/tun
	fi
	# A namespace the sandboxes use, around the cheapest command: if this
	# fails the tests would only say the same.
	if ! bwrap --unshare-all --die-with-parent --cap-drop ALL --ro-bind / / -- true; then
		echo "sandbox-setup: bwrap is installed but cannot create namespaces here (see its message above)" >&2
		return 1
	fi

	for tool in node npm; do
		if ! command -v "$tool" >/dev/null 2>&1; then
			echo "sandbox-setup: $tool not found on PATH; the npm sandbox tests need node and npm" >&2
			return 1
		fi
	done
	cache="${SWITCHBOARD_SANDBOX_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/switchboard-sandbox}"
	mkdir -p "$cache" || return 1
	for pkg in @modelcontextprotocol/server-memory @modelcontextprotocol/server-filesystem @modelcontextprotocol/server-everything; do
		installed="$(node -p 'require(process.argv[1]).version' "$cache/node_modules/$pkg/package.json" 2>/dev/null || true)"
		if [ "$installed" != "$version" ]; then
			echo "sandbox-setup: installing $pkg@$version into $cache" >&2
			npm install --no-audit --no-fund --save-exact --prefix "$cache" "$pkg@$version" >&2 || {
				echo "sandbox-setup: npm install $pkg@$version failed" >&2
				return 1
			}
		fi
	done
	# The sandboxes run these as another user may; the cache must be
	# readable (npm keeps the umask's modes).
	chmod -R a+rX "$cache" 2>/dev/null

	export SWITCHBOARD_SANDBOX_REQUIRED=1
	export SWITCHBOARD_SANDBOX_NPM="$cache"
	echo "sandbox-setup: bubblewrap $(bwrap --version | cut -d' ' -f2) works; the npm servers are ready in $cache" >&2
}

if [ "${BASH_SOURCE[0]}" != "$0" ]; then
	# Sourced: export into the caller's shell, without changing its options.
	if _sb_sandbox_setup; then
		unset -f _sb_sandbox_setup
		printf 'SWITCHBOARD_SANDBOX_REQUIRED=%s\nSWITCHBOARD_SANDBOX_NPM=%s\n' \
			"$SWITCHBOARD_SANDBOX_REQUIRED" "$SWITCHBOARD_SANDBOX_NPM" >&2
		return 0
	fi
	unset -f _sb_sandbox_setup
	return 1
fi

set -uo pipefail
_sb_sandbox_setup || exit 1
printf 'export SWITCHBOARD_SANDBOX_REQUIRED=%q\nexport SWITCHBOARD_SANDBOX_NPM=%q\n' \
	"$SWITCHBOARD_SANDBOX_REQUIRED" "$SWITCHBOARD_SANDBOX_NPM"
