#!/bin/sh
# make test: unit tests, then integration tests against a throwaway
# PostgreSQL cluster that this script creates and removes. The last line is
# the total "N passed, N failed"; the exit status is non-zero on any failure.
set -u
build="$1"
dir=$(mktemp -d /tmp/silt-test.XXXXXX)
chmod 755 "$dir"
# Ports below the kernel's ephemeral range (32768 and up), so no outgoing
# connection holds ours; a few tries in case another cluster does.
pick_port() { echo $(( 15000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 17000 )); }
start_cluster() {
    for try in 1 2 3 4 5; do
        pgport=$(pick_port)
        scripts/pgcluster.sh start "$dir/pg" "$pgport" fast 2>"$dir/pgstart.err" && return 0
        scripts/pgcluster.sh stop "$dir/pg"
    done
    cat "$dir/pgstart.err"
    return 1
}
cleanup() { scripts/pgcluster.sh stop "$dir/pg"; rm -rf "$dir"; }
trap cleanup EXIT INT TERM

counts() { tail -n 1 "$1" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p'; }

echo "== unit tests"
"$build/unit_tests" 2>&1 | tee "$dir/unit.out"
echo "== integration tests"
if start_cluster; then
    SILT_TEST_PGDIR="$dir/pg" SILT_TEST_PGPORT="$pgport" SILT_BIN="$build/silt" \
        "$build/integration_tests" 2>&1 | tee "$dir/integration.out"
else
    echo "0 passed, 1 failed" > "$dir/integration.out"
    echo "could not start PostgreSQL"
fi
set -- $(counts "$dir/unit.out") $(counts "$dir/integration.out")
passed=$(( ${1:-0} + ${3:-0} ))
failed=$(( ${2:-1} + ${4:-1} ))
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
