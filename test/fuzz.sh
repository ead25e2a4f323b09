#!/bin/sh
# Runs every fuzz target of the module for a short, bounded time (FUZZTIME,
# default 4s each) after its checked-in corpus (testdata/fuzz/<target>/),
# which each target must have. make test runs it; a finding fails it and
# leaves the failing input in the package's testdata/fuzz for `go test` to
# replay.
set -eu
cd "$(dirname "$0")/.."
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-4s}
n=0
for file in $(grep -rl --include='*_test.go' '^func Fuzz' . | sort); do
	dir=$(dirname "$file")
	for target in $(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$file"); do
		if [ -z "$(ls "$dir/testdata/fuzz/$target" 2>/dev/null)" ]; then
			echo "fuzz: $target in $dir has no checked-in corpus ($dir/testdata/fuzz/$target)" >&2
			exit 1
		fi
		echo "fuzz: $dir $target for $FUZZTIME"
		out=$("$GO" test -run '^$' -fuzz "^$target\$" -fuzztime "$FUZZTIME" "$dir" 2>&1) ||
			{ echo "$out" >&2; exit 1; }
		n=$((n + 1))
	done
done
echo "fuzz: $n targets, no finding"
