#!/bin/sh
# make fuzz: runs each libFuzzer target for FUZZ_SECONDS (default 60).
#   scripts/fuzz.sh BUILD fuzz_json fuzz_http ...
# A target starts from its seeds (tests/fuzz/seeds/NAME/, if any) and its
# dictionary (tests/fuzz/NAME.dict, if any); what it finds goes to a
# throwaway corpus, so the tree is never written. A crash, leak, timeout
# or failed invariant leaves its input in BUILD/fuzz-artifacts/ and fails
# the run (after the other targets have run too).
set -u
build="$1"; shift
seconds=${FUZZ_SECONDS:-60}
mkdir -p "$build/fuzz-artifacts"
corpus=$(mktemp -d /tmp/silt-fuzz.XXXXXX) || exit 1
trap 'rm -rf "$corpus"' EXIT
failed=""
for name in "$@"; do
    mkdir -p "$corpus/$name"
    set -- -max_total_time="$seconds" -max_len=8192 -timeout=30 -rss_limit_mb=4096 \
           -print_final_stats=1 -artifact_prefix="$build/fuzz-artifacts/$name-"
    [ -f "tests/fuzz/$name.dict" ] && set -- "$@" -dict="tests/fuzz/$name.dict"
    seeds=""
    [ -d "tests/fuzz/seeds/$name" ] && seeds="tests/fuzz/seeds/$name"
    echo "== $name for $seconds s"
    # shellcheck disable=SC2086  # seeds is empty or one directory
    if "$build/$name" "$@" "$corpus/$name" $seeds >"$corpus/$name.log" 2>&1; then
        grep -E '^stat::number_of_executed_units|^Done ' "$corpus/$name.log" | tail -n 2
    else
        tail -n 60 "$corpus/$name.log"
        failed="$failed $name"
    fi
done
[ -z "$failed" ] || { echo "fuzz: failed:$failed (inputs in $build/fuzz-artifacts/)"; exit 1; }
echo "fuzz: every target ran $seconds s without a failure"
