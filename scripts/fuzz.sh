#!/bin/bash
# fuzz.sh FUZZTIME [PACKAGE...]
#
# Runs every Fuzz* target of the given packages (default: the whole module)
# for FUZZTIME each (e.g. 3s, 1m, 1000x). Targets are discovered with
# `go test -list '^Fuzz'`, so a new FuzzXxx is picked up without editing
# anything. Exits non-zero at the first target that finds a failure; the
# failing input is left in the package's testdata/fuzz directory.
set -euo pipefail

fuzztime=${1:?usage: fuzz.sh FUZZTIME [PACKAGE...]}
shift
go=${GO:-go}
if [ $# -eq 0 ]; then
	mapfile -t pkgs < <($go list ./...)
else
	mapfile -t pkgs < <($go list "$@")
fi

count=0
for pkg in "${pkgs[@]}"; do
	targets=$($go test -list '^Fuzz' -run '^$' "$pkg" | grep '^Fuzz' || true)
	for target in $targets; do
		echo "== $pkg $target ($fuzztime)"
		$go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg"
		count=$((count + 1))
	done
done
echo "fuzzed $count targets for $fuzztime each"
