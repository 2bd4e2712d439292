#!/bin/sh
# make test: unit tests, then integration tests against a throwaway
# PostgreSQL cluster that this script creates and removes, with the client
# libraries' suites beside them. Each part runs its tests side by side
# (SILT_TEST_JOBS at a time; by default three per online core for the C
# tests, one per core for the Python classes, three JavaScript files). The
# last line is the total "N passed, N failed"; the exit status is non-zero
# on any failure.
set -u
build="$1"
case "$build" in /*) bin="$build/silt" ;; *) bin="$PWD/$build/silt" ;; esac
# In memory when there is room (a gigabyte free in /dev/shm): every test
# clones a database of some 460 files and drops it, and on a disk's file
# system creating and deleting those files costs PostgreSQL more CPU than
# the tests themselves do.
tmp=/tmp
[ "$(df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 { print $4 }')" -gt 1048576 ] 2>/dev/null && tmp=/dev/shm
dir=$(mktemp -d "$tmp/silt-test.XXXXXX")
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
# Every integration test works in its own clone of this database, migrated
# here once by the real binary (the name is tests/integration/support.c's
# TEMPLATE_DB). No connections are allowed to it: a clone fails while anyone
# is in its template.
make_template() {
    psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$pgport" -U postgres -d postgres \
        -c 'CREATE DATABASE silt_template' &&
    PG_HOST=127.0.0.1 PG_PORT="$pgport" PG_USER=postgres PG_DB=silt_template LOG_LEVEL=warn \
        "$build/silt" migrate >/dev/null 2>"$dir/migrate.err" &&
    psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$pgport" -U postgres -d postgres \
        -c 'ALTER DATABASE silt_template ALLOW_CONNECTIONS false'
}
cleanup() { scripts/pgcluster.sh stop "$dir/pg"; rm -rf "$dir"; }
trap cleanup EXIT INT TERM

counts() { tail -n 1 "$1" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p'; }

echo "== unit tests"
"$build/unit_tests" 2>&1 | tee "$dir/unit.out"
echo "== integration tests"
if ! start_cluster; then
    echo "0 passed, 1 failed" > "$dir/integration.out"
    echo "could not start PostgreSQL"
elif ! make_template; then
    echo "0 passed, 1 failed" > "$dir/integration.out"
    cat "$dir/migrate.err" 2>/dev/null
    echo "could not create the template database"
else
    # Each runner of the three: $1 is HARNESS_ALONE, skip (what shares the
    # machine) or only (what runs alone: TEST_ALONE, a Python class's
    # alone, run.mjs's ALONE). XDG_STATE_HOME: what silt pop records for
    # silt ack --last stays in the suite's directory, not the user's home.
    integration() {
        XDG_STATE_HOME="$dir/state" SILT_TEST_PGDIR="$dir/pg" SILT_TEST_PGPORT="$pgport" SILT_BIN="$build/silt" \
            HARNESS_ALONE="$1" "$build/integration_tests" 2>&1
    }
    python_suite() {
        SILT_TEST_PGPORT="$pgport" SILT_BIN="$bin" HARNESS_ALONE="$1" python3 clients/python/tests/run.py 2>&1
    }
    js_suite() {
        SILT_TEST_PGPORT="$pgport" SILT_BIN="$bin" HARNESS_ALONE="$1" node clients/js/test/run.mjs 2>&1
    }
    # The client libraries, each against real servers of this build, in
    # databases cloned from the same template; each runner ends with its
    # own "N passed, N failed". They run beside the integration tests that
    # share the machine (whose waits leave a core idle much of the time),
    # their accounts held until those end. What runs alone in any of the
    # three runs after all of that, one at a time.
    python_suite skip >"$dir/python.out" &
    python=$!
    js_suite skip >"$dir/js.out" &
    js=$!
    integration skip | tee "$dir/integration.out"
    wait "$python" "$js"
    echo "== integration tests that run alone"
    integration only | tee "$dir/alone.out"
    echo "== python client (clients/python)"
    cat "$dir/python.out"
    echo "-- its classes that run alone"
    python_suite only | tee "$dir/python-alone.out"
    echo "== javascript client (clients/js)"
    cat "$dir/js.out"
    echo "-- its files that run alone"
    js_suite only | tee "$dir/js-alone.out"
fi
# Every part's count; a part that printed none (it did not run, or died)
# counts as one failure.
passed=0
failed=0
for part in unit integration alone python python-alone js js-alone; do
    set -- $(counts "$dir/$part.out" 2>/dev/null)
    passed=$((passed + ${1:-0}))
    failed=$((failed + ${2:-1}))
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
