#!/usr/bin/env bash
# The timing tier (tests that call tier.Timing): with no arguments, lists it, one line per
# package ("./dir TestA TestB"); with arguments, runs it as those arguments followed by -run
# and the packages, with MQBLAST_TIMING=only (make test-timing:
# scripts/timing-tests.sh go test -count=1 -p 1).
# Timing must be called in the body of a top-level test function; a call anywhere else
# fails here, so that no timing test is left out of the pass that runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
list=$(grep -rl --include='*_test.go' 'tier\.Timing(' . | sed 's#^\./##' | sort | while read -r f; do
	awk -v f="$f" '
		/^func / { name = ""; if (match($0, /^func Test[A-Za-z0-9_]*\(t \*testing\.T\)/)) name = substr($2, 1, index($2, "(") - 1) }
		/tier\.Timing\(/ {
			if (name == "") { printf "%s:%d: tier.Timing outside a top-level test function\n", f, NR > "/dev/stderr"; bad = 1; exit 1 }
			print f, name
		}
		END { exit bad }' "$f"
done | awk '
	{ d = $1; sub(/\/[^\/]*$/, "", d); d = "./" d; if (!(d in t)) { order[++n] = d; t[d] = $2 } else t[d] = t[d] " " $2 }
	END { for (i = 1; i <= n; i++) print order[i], t[order[i]] }')
if [ $# -eq 0 ]; then
	echo "$list"
	exit 0
fi
run="^($(echo "$list" | cut -d' ' -f2- | tr ' \n' '||' | sed 's/|$//'))\$"
# shellcheck disable=SC2046 # one word per package
MQBLAST_TIMING=only exec "$@" -run "$run" $(echo "$list" | cut -d' ' -f1)
