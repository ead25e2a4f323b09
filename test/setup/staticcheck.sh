#!/usr/bin/env bash
# staticcheck.sh — make sure the pinned staticcheck is built and print the
# path of its binary on stdout (logs go to stderr). `make lint` (and so
# `make test`) runs it.
#
# Built with `go install honnef.co/go/tools/cmd/staticcheck@VERSION` (the Go
# module proxy only) into ${XDG_CACHE_HOME:-$HOME/.cache}/carbongate/bin/;
# a rerun with that version built returns at once; a lock keeps concurrent
# callers from building it twice. STATICCHECK_VERSION overrides the pin.
set -euo pipefail

version="${STATICCHECK_VERSION:-v0.8.2}"
module="honnef.co/go/tools/cmd/staticcheck"
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
sc="$cache_root/bin/staticcheck"

built() {
  [ -x "$sc" ] && "$sc" -version 2>/dev/null | grep -qF "(${version#v})"
}

build() {
  echo "staticcheck.sh: building staticcheck $version from the Go module proxy"
  go_install "$1" "" "$module@$version"
}

build_once staticcheck "$sc"
