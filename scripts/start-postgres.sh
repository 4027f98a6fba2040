# shellcheck shell=bash
# Starts a throwaway PostgreSQL for the tests and exports its URL as
# SWITCHBOARD_TEST_POSTGRES. Source it, don't run it, so the export reaches
# the caller:
#
#     source scripts/start-postgres.sh    # installs PostgreSQL if missing
#     go test ./store/...
#     stop_postgres                        # or let the EXIT trap do it
#
# The server runs as the postgres user (PostgreSQL refuses root), listens on
# 127.0.0.1 only, on a free port from 55432 up, with trust auth, its socket
# and data in a fresh temp dir. fsync is off: the data is thrown away.
#
# Cleanup: stop_postgres stops the server and removes the temp dir. It is
# installed as the EXIT trap when the calling shell has none; a caller that
# has its own EXIT trap must call stop_postgres itself (a message says so).
#
# If SWITCHBOARD_TEST_POSTGRES is already set (an external server, or an
# earlier source of this script in the same shell), nothing is started.
#
# The script changes no shell options of the caller (set -e and friends):
# every step checks its own status, and failure makes `source` return
# non-zero, which a caller under set -e stops at.

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
	echo "start-postgres.sh: source this script (source $0); running it cannot export SWITCHBOARD_TEST_POSTGRES" >&2
	exit 2
fi

# stop_postgres stops the server this script started and removes its data.
# Safe to call more than once, and when nothing was started.
stop_postgres() {
	local dir="${_SBPG_DIR:-}" bin="${_SBPG_BIN:-}"
	[[ -n "$dir" ]] || return 0
	if [[ -n "$bin" && -f "$dir/data/postmaster.pid" ]]; then
		_sbpg_as_postgres "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 ||
			echo "stop_postgres: pg_ctl stop failed; see $dir/postgres.log" >&2
	fi
	rm -rf -- "$dir"
	unset _SBPG_DIR _SBPG_BIN SWITCHBOARD_TEST_POSTGRES
}

# _sbpg_as_postgres runs a command as the postgres user, or as the current
# user when that is not root (a developer's own PostgreSQL binaries).
_sbpg_as_postgres() {
	if [[ "$(id -u)" -eq 0 ]]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

# _sbpg_bindir prints the bin directory of the newest installed PostgreSQL
# server, or nothing.
_sbpg_bindir() {
	local bin
	bin="$(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V | tail -n 1)"
	if [[ -x "$bin/postgres" ]]; then
		printf '%s\n' "$bin"
	fi
}

_sbpg_start() {
	if [[ -n "${_SBPG_DIR:-}" && -n "${SWITCHBOARD_TEST_POSTGRES:-}" ]]; then
		echo "start-postgres.sh: already running at $SWITCHBOARD_TEST_POSTGRES"
		return 0
	fi
	if [[ -n "${SWITCHBOARD_TEST_POSTGRES:-}" ]]; then
		echo "start-postgres.sh: using SWITCHBOARD_TEST_POSTGRES from the environment; starting nothing"
		return 0
	fi

	local bin
	bin="$(_sbpg_bindir)"
	if [[ -z "$bin" ]]; then
		if [[ "$(id -u)" -ne 0 ]]; then
			echo "start-postgres.sh: PostgreSQL is not installed and we are not root to install it (apt-get install postgresql)" >&2
			return 1
		fi
		echo "start-postgres.sh: installing PostgreSQL (apt-get)..."
		local aptlog
		aptlog="$(mktemp)"
		if ! { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postgresql; } >"$aptlog" 2>&1; then
			cat "$aptlog" >&2
			rm -f -- "$aptlog"
			echo "start-postgres.sh: installing PostgreSQL failed" >&2
			return 1
		fi
		rm -f -- "$aptlog"
		bin="$(_sbpg_bindir)"
		if [[ -z "$bin" ]]; then
			echo "start-postgres.sh: PostgreSQL installed but no /usr/lib/postgresql/*/bin/postgres" >&2
			return 1
		fi
	fi
	if [[ "$(id -u)" -eq 0 ]] && ! id postgres >/dev/null 2>&1; then
		# The Debian package creates it; a hand-made install may not have.
		useradd --system --user-group --no-create-home --shell /bin/sh postgres || return 1
	fi

	# As root, /tmp rather than $TMPDIR: the postgres user must be able to
	# reach the directory, and the socket path must stay short.
	local dir parent="${TMPDIR:-/tmp}"
	[[ "$(id -u)" -ne 0 ]] || parent=/tmp
	dir="$(mktemp -d "$parent/switchboard-pg.XXXXXX")" || return 1
	chmod 700 "$dir"
	if [[ "$(id -u)" -eq 0 ]]; then
		chown postgres: "$dir" || { rm -rf -- "$dir"; return 1; }
	fi
	_SBPG_DIR="$dir"
	_SBPG_BIN="$bin"

	# --locale=C: a fresh machine may have no other locale; it also makes
	# text sort by bytes as the tests expect of SQLite too.
	if ! _sbpg_as_postgres "$bin/initdb" -D "$dir/data" -U postgres --auth=trust \
		--encoding=UTF8 --locale=C --no-sync >"$dir/initdb.log" 2>&1; then
		cat "$dir/initdb.log" >&2
		echo "start-postgres.sh: initdb failed" >&2
		stop_postgres
		return 1
	fi

	# A port nothing listens on; pg_ctl start fails if another process
	# takes it in between, and we then try the next one.
	local port=55432 started=""
	local _
	for _ in {1..10}; do
		while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
			port=$((port + 1))
		done
		if _sbpg_as_postgres "$bin/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 30 \
			-o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off -c full_page_writes=off" \
			start >/dev/null 2>&1; then
			started=1
			break
		fi
		port=$((port + 1))
	done
	if [[ -z "$started" ]]; then
		cat "$dir/postgres.log" >&2 2>/dev/null
		echo "start-postgres.sh: pg_ctl start failed" >&2
		stop_postgres
		return 1
	fi

	local waited=0
	until "$bin/pg_isready" -q -h 127.0.0.1 -p "$port" -t 1; do
		if ((waited >= 30)); then
			cat "$dir/postgres.log" >&2
			echo "start-postgres.sh: PostgreSQL not ready after 30 s" >&2
			stop_postgres
			return 1
		fi
		sleep 1
		waited=$((waited + 1))
	done

	export SWITCHBOARD_TEST_POSTGRES="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
	if [[ -z "$(trap -p EXIT)" ]]; then
		trap stop_postgres EXIT
	else
		echo "start-postgres.sh: an EXIT trap is already set; call stop_postgres when done" >&2
	fi
	echo "start-postgres.sh: PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port (data and log in $dir)"
}

_sbpg_start
