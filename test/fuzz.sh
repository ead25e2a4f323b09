#!/bin/sh
# Runs every fuzz target of the module after its checked-in corpus
# (testdata/fuzz/<target>/), which each target must have, for the number of
# inputs its budget states: a line "// fuzz budget: Nx" in the comment above
# the target, sized to about 4 s on a quiet 2-core machine. A count, not a
# duration: with a duration, Go 1.26's fuzz coordinator can report its own
# deadline as a failure ("context deadline exceeded", no input written) when
# its workers are starved on a loaded machine (Go issue 75804). FUZZEXECS=Nx
# overrides every budget. make test runs it; a finding fails it and leaves
# the failing input in the package's testdata/fuzz for `go test` to replay.
set -eu
cd "$(dirname "$0")/.."
GO=${GO:-go}
n=0
for file in $(grep -rl --include='*_test.go' '^func Fuzz' . | sort); do
	dir=$(dirname "$file")
	for target in $(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$file"); do
		if [ -z "$(ls "$dir/testdata/fuzz/$target" 2>/dev/null)" ]; then
			echo "fuzz: $target in $dir has no checked-in corpus ($dir/testdata/fuzz/$target)" >&2
			exit 1
		fi
		budget=$(awk -v t="$target" '
			/^\/\/ fuzz budget: [0-9]+x/ { b = $4; next }
			/^\/\// { next }
			$0 ~ "^func " t "\\(" { print b; exit }
			{ b = "" }' "$file")
		if [ -z "$budget" ]; then
			echo "fuzz: $target in $file has no budget (a line \"// fuzz budget: Nx\" in the comment above it)" >&2
			exit 1
		fi
		budget=${FUZZEXECS:-$budget}
		echo "fuzz: $dir $target for $budget"
		out=$("$GO" test -run '^$' -fuzz "^$target\$" -fuzztime "$budget" "$dir" 2>&1) ||
			{ echo "$out" >&2; exit 1; }
		n=$((n + 1))
	done
done
echo "fuzz: $n targets, no finding"
