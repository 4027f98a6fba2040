#!/usr/bin/env bash
# Prepares the web page's browser tests (web/): installs Debian's chromium
# with apt-get if it is missing, and exports its path. The tests drive it
# headless with chromedp; without it they are skipped (failed under CI=1).
#
#   source scripts/web-setup.sh     # exports the variable below
#   eval "$(scripts/web-setup.sh)"  # the same from a script
#   go test ./web/
#
# Exports:
#   SWITCHBOARD_CHROMIUM   the chromium binary
#
# Installing needs root (or sudo) and Debian's package lists; a chromium
# already on PATH, or in $SWITCHBOARD_CHROMIUM, is used as it is. Progress
# goes to stderr; when run (not sourced), the export line goes to stdout.

_sb_web_setup() {
	local bin="${SWITCHBOARD_CHROMIUM:-}" sudo=""
	if [ -z "$bin" ]; then
		bin="$(command -v chromium 2>/dev/null || true)"
	fi
	if [ -z "$bin" ]; then
		if [ "$(id -u)" -ne 0 ]; then
			if ! command -v sudo >/dev/null 2>&1; then
				echo "web-setup: chromium is missing, and installing it needs root (apt-get install chromium)" >&2
				return 1
			fi
			sudo="sudo"
		fi
		echo "web-setup: installing Debian's chromium" >&2
		{ $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium; } >&2 || {
			echo "web-setup: apt-get install chromium failed" >&2
			return 1
		}
		bin="$(command -v chromium 2>/dev/null || true)"
	fi
	if [ -z "$bin" ] || [ ! -x "$bin" ]; then
		echo "web-setup: no chromium after the install" >&2
		return 1
	fi
	export SWITCHBOARD_CHROMIUM="$bin"
	echo "web-setup: $("$bin" --version 2>/dev/null || echo chromium) at $bin" >&2
}

if [ "${BASH_SOURCE[0]}" != "$0" ]; then
	# Sourced: export into the caller's shell, without changing its options.
	if _sb_web_setup; then
		unset -f _sb_web_setup
		return 0
	fi
	unset -f _sb_web_setup
	return 1
fi

set -uo pipefail
_sb_web_setup || exit 1
printf 'export SWITCHBOARD_CHROMIUM=%q\n' "$SWITCHBOARD_CHROMIUM"
