#!/bin/sh
# Installs the Debian packages silt builds and tests with, when any is missing:
# deps.sh for building and running, deps.sh test for `make test` too,
# deps.sh fuzz for `make fuzz` (clang, and libFuzzer in libclang-rt-dev),
# deps.sh bench for scripts/bench-wrk.sh (wrk, the independent load generator),
# deps.sh pgq for scripts/bench-pgq.sh (wrk and PgQ for the newest PostgreSQL).
# Runs apt-get only as root; otherwise it names what to install and fails.
set -e
need=""
# curl: the README's tour uses it, and a test runs that tour as written.
# libinih-dev: silt.conf's reader (src/base/conffile.c).
# libjwt-dev: bearer tokens (src/api/token.c; JWT_ENABLED).
# libjs-chart.js: the dashboard's charts, embedded from /usr/share/javascript.
# chromium (tests only): the dashboard's browser test drives it headless.
pkgs="gcc make pkg-config libpq-dev libevent-dev libzstd-dev libxxhash-dev
      libssl-dev libinih-dev libjwt-dev postgresql curl libjs-chart.js"
[ "${1:-}" = test ] && pkgs="$pkgs chromium"
# The client libraries' suites (clients/python, clients/js) need an
# interpreter: any python3 3.11+ and node 18+ on the PATH will do, Debian's
# when there is none.
[ "${1:-}" = test ] && ! command -v python3 >/dev/null && pkgs="$pkgs python3"
[ "${1:-}" = test ] && ! command -v node >/dev/null && pkgs="$pkgs nodejs"
[ "${1:-}" = fuzz ] && pkgs="$pkgs clang libclang-rt-dev"
[ "${1:-}" = bench ] && pkgs="$pkgs wrk"
[ "${1:-}" = pgq ] && pkgs="$pkgs wrk postgresql-$(ls /usr/lib/postgresql | sort -V | tail -n 1)-pgq3"
for pkg in $pkgs; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" \
        || need="$need $pkg"
done
[ -z "$need" ] && exit 0
if [ "$(id -u)" != 0 ]; then
    echo "silt needs these Debian packages:$need (run as root or install them)" >&2
    exit 1
fi
echo "installing:$need"
DEBIAN_FRONTEND=noninteractive apt-get install -y $need >/dev/null \
    || { apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y $need >/dev/null; }
