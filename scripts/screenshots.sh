#!/usr/bin/env bash
# Regenerates the web page's screenshots in docs/ (README.md shows
# docs/web-servers.png; the others: the detail view, a failed test, the
# phone, field errors, progress, elicitation, the tool bench, toolsets and
# tokens, the audit log): a real serve with six servers and some calls,
# Debian's chromium headless (scripts/web-setup.sh installs it), the page
# at 1280 px and at 375 px. Run from anywhere in the repository:
#
#   scripts/screenshots.sh            # writes docs/web-*.png
#   scripts/screenshots.sh DIR        # writes them to DIR instead
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$(cd "${1:-$root/docs}" && pwd)"
cd "$root"
# shellcheck source=scripts/web-setup.sh
source scripts/web-setup.sh
# The servers run sandboxed, as serve runs them.
# shellcheck source=scripts/sandbox-setup.sh
source scripts/sandbox-setup.sh
SWITCHBOARD_SCREENSHOTS="$out" go test -count=1 -run '^TestDocScreenshots$' -v ./web/
ls -l "$out"/web-*.png
