#!/usr/bin/env bash
# Reads the log make test's passes wrote through report.Audit ($MQBLAST_RESULT_AUDIT): one
# line per result document a run wrote ("ok WHERE" or "broken WHERE: PROBLEMS"). Says how
# many documents were checked and lists every one that broke an accounting identity; exits 1
# when one did, or when no document was checked at all (the audit would not be wired).
set -euo pipefail
log=$1
n=0
bad=0
if [ -s "$log" ]; then
	n=$(grep -c '' "$log")
	bad=$(grep -c '^broken ' "$log" || true)
fi
echo "result audit: $n result documents checked, $bad broke an accounting identity"
grep '^broken ' "$log" 2>/dev/null | sed 's/^/  /' || true
if [ "$n" = 0 ]; then
	echo "result audit: no document was checked: is $log the log the tests wrote (report.AuditEnv)?"
	exit 1
fi
[ "$bad" = 0 ]
