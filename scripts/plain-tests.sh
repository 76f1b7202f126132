#!/usr/bin/env bash
# The pass without the race detector after make test's race pass: runs the tests the race
# pass skipped and wrote down (internal/tier SkipRace, a line each: the package's directory
# and the top-level test's name) in the file $1, as the remaining arguments followed by
# -run and their packages (make test: scripts/plain-tests.sh FILE go test -count=1 -p 2).
# With nothing written down it runs nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
list=$1
shift
if [ ! -s "$list" ]; then
	echo "no test was left for the pass without the race detector"
	exit 0
fi
root=$PWD
# shellcheck disable=SC2016 # $1, $2 are awk's
dirs=$(awk -v root="$root" '{ d = $1; if (index(d, root) == 1) d = "." substr(d, length(root) + 1); print d }' "$list" | LC_ALL=C sort -u)
names=$(awk '{ print $2 }' "$list" | LC_ALL=C sort -u)
echo "the pass without the race detector: $(echo "$names" | wc -l) tests in $(echo "$dirs" | wc -l) packages"
# A name is run in every listed package that has it: a test of the same name in another of
# them runs twice, never not at all.
# shellcheck disable=SC2046 # one word per package
MQBLAST_TIMING=skip exec "$@" -run "^($(echo "$names" | paste -sd'|'))\$" $(echo "$dirs")
