#!/bin/sh
# schema_at.sh WHAT DB PORT: fills the empty database DB (on 127.0.0.1:PORT)
# with the schema an earlier silt left, from the repository's history: WHAT
# is a commit, or a schema version (the last commit whose newest migration
# it was). Each of that commit's files is applied as its `silt migrate` did:
# the migrations in number order, each in one transaction with its version
# row, then (once there were function files) the functions in ORDER's order.
# Prints the commit used. Needs the history (a full clone).
set -e
what="$1"; db="$2"; port="$3"
psql="psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p $port -U postgres -d $db"
# Warnings and errors only: the migrations' DROP ... IF EXISTS notices run
# to pages, and a caller reading a bounded reply (run_cmd) stops reading,
# which would kill this script on a full pipe.
export PGOPTIONS="${PGOPTIONS:-} -c client_min_messages=warning"

# The last commit whose newest migration is version $1 (of those that
# changed the schema: the commits after it until the next one have its).
# When HEAD has that version's file, the commit's newest file must be it: a
# branch whose migration was renumbered before it landed (its number taken
# by another's meanwhile) left commits with that number under another
# name, a schema no release ran.
commit_of_version() {
    number=$(printf '%03d' "$1")
    want=$(git ls-tree --name-only HEAD sql/migrations/ | grep -o "/${number}_[^/]*\.sql\$" || true)
    for c in $(git rev-list HEAD -- sql/); do
        newest=$(git ls-tree --name-only "$c" sql/ sql/migrations/ | grep -o '/[0-9][0-9][0-9]_[^/]*\.sql$' | sort | tail -n 1)
        case "$newest" in "/${number}_"*) ;; *) continue ;; esac
        [ -z "$want" ] || [ "$newest" = "$want" ] || continue
        echo "$c"; return
    done
    echo HEAD
}

case "$what" in
    [0-9]|[0-9][0-9]|[0-9][0-9][0-9]) commit=$(commit_of_version "$what") ;;
    *) commit="$what" ;;
esac
git rev-parse --verify -q "$commit^{commit}" >/dev/null ||
    { echo "schema_at: no commit $commit here: the upgrade tests need the repository's history" >&2; exit 1; }

# The function files of a commit that has them, in ORDER's order: those
# marked "before" (FILTER '^before ') or the others ('^[^#b]').
functions() {
    for f in $(git show "$commit:sql/functions/ORDER" | grep "$1" | sed 's/^before //'); do
        git show "$commit:sql/functions/$f"; echo ';'
    done
}
layered=false
git cat-file -e "$commit:sql/functions/ORDER" 2>/dev/null && layered=true

# One session for all of it (a psql per file was most of the time): each
# migration in its own transaction with its version row, as migrate ran it.
migrations=$(git ls-tree --name-only "$commit" sql/ sql/migrations/ | grep '/[0-9][0-9][0-9]_.*\.sql$' | sort)
{
    echo "CREATE SCHEMA IF NOT EXISTS queen; CREATE TABLE IF NOT EXISTS queen.schema_migrations (
          version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now());"
    if $layered; then echo 'SET check_function_bodies = off;'; functions '^before '; echo 'RESET check_function_bodies;'; fi
    for f in $migrations; do
        name=$(basename "$f")
        echo 'BEGIN;'; git show "$commit:$f"; echo ';'
        echo "INSERT INTO queen.schema_migrations (version, name) VALUES (${name%%_*} + 0, '$name'); COMMIT;"
    done
    if $layered; then echo 'SET check_function_bodies = off;'; functions '^[^#b]'; fi
} | $psql -f - >/dev/null
git rev-parse --short "$commit"
