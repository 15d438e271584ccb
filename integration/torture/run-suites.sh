#!/bin/bash
# run-suites.sh HOST PORT SHARE USER PASS OUT.tsv SUITE...
#
# Runs whole smbtorture suites against a running server and writes one TSV
# row per test: suite, test (full name), result (success, failure, error,
# skip, xfail, uxsuccess, or "noresult" for a test that started but never
# reported), seconds. Use it to find tests to add to allowlist.txt:
#
#   run-suites.sh 127.0.0.1 4450 share alice pw out.tsv $(cat suites.txt)
#   awk -F'\t' '$3 == "success" {print $2}' out.tsv
#
# Environment: USER2/PASS2 (second account for smb2.session, default bob and
# PASS), SUITE_TIMEOUT (seconds per suite, default 1800), SMBTORTURE_ARGS
# (extra arguments, e.g. "--target=samba3").
set -euo pipefail

if [ $# -lt 7 ]; then
	sed -n '2,16s/^# \{0,1\}//p' "$0" >&2
	exit 2
fi
host=$1 port=$2 share=$3 user=$4 pass=$5 out=$6
shift 6
user2=${USER2:-bob}
pass2=${PASS2:-$pass}
timeout=${SUITE_TIMEOUT:-1800}

workdir=$(mktemp -d)
trap 'rm -rf "$workdir"' EXIT

printf 'suite\ttest\tresult\tseconds\n' >"$out"
for suite in "$@"; do
	log="$workdir/$suite.log"
	echo "== $suite" >&2
	# shellcheck disable=SC2086  # SMBTORTURE_ARGS is a word list
	(cd "$workdir" && timeout "$timeout" smbtorture "//$host/$share" \
		--configfile=/dev/null -p "$port" -U "$user%$pass" \
		"--option=torture:user2name=$user2" "--option=torture:user2password=$pass2" \
		--fullname --format=subunit ${SMBTORTURE_ARGS:-} "$suite") >"$log" 2>&1 || true
	# Subunit: "test: NAME", "time: DATE HH:MM:SS.frac" lines, then
	# "RESULT: NAME" (with an optional "[ ... ]" detail block).
	awk -v suite="$suite" '
		function secs(t,   p) { split(t, p, ":"); return p[1] * 3600 + p[2] * 60 + p[3] }
		function emit(name, result,   d) {
			d = (start >= 0 && last >= start) ? last - start : (start >= 0 ? last - start + 86400 : 0)
			printf "%s\t%s\t%s\t%.3f\n", suite, name, result, d
			delete open_[name]
		}
		# NAME is the rest of the line (it may hold spaces: "smb2.ioctl.copy-chunk
		# streams"), without a trailing " [" or " [ multipart".
		function name_of(line) { sub(/^[a-z]+: /, "", line); sub(/ \[( multipart)?$/, "", line); return line }
		/^test: / { cur = name_of($0); open_[cur] = 1; start = -1; next }
		/^time: / { t = secs($3); if (start < 0) start = t; last = t; next }
		/^(success|successful|failure|fail|error|skip|xfail|uxsuccess): / {
			r = $1; sub(/:$/, "", r)
			if (r == "successful") r = "success"
			if (r == "fail") r = "failure"
			n = name_of($0)
			if (n in open_) emit(n, r)
			next
		}
		END { for (n in open_) emit(n, "noresult") }
	' "$log" >>"$out"
	if ! grep -q "^$suite" <(cut -f2 "$out"); then
		printf '%s\t%s\t%s\t%s\n' "$suite" "$suite" "noresult" "0" >>"$out"
		tail -5 "$log" >&2
	fi
done
awk -F'\t' 'NR > 1 { n[$3]++ } END { for (r in n) printf "%s %d\n", r, n[r] }' "$out" | sort >&2
