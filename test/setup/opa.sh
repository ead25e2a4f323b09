#!/usr/bin/env bash
# opa.sh — make sure the pinned Open Policy Agent is built and print the path
# of its binary on stdout (logs go to stderr).
#
# OPA is built from source with
#   go install github.com/open-policy-agent/opa@VERSION
# (the Go module proxy only: no release download) into
#   ${XDG_CACHE_HOME:-$HOME/.cache}/carbongate/bin/opa
# A rerun with that version already built returns at once; a lock keeps
# concurrent callers from building it twice. OPA_VERSION overrides the pin.
set -euo pipefail

version="${OPA_VERSION:-v1.22.2}"
module="github.com/open-policy-agent/opa"
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
opa="$cache_root/bin/opa"

built() {
  [ -x "$opa" ] && [ "$("$opa" version 2>/dev/null | sed -n 's/^Version: //p')" = "${version#v}" ]
}

build() {
  echo "opa.sh: building OPA $version from the Go module proxy"
  go_install "$1" "-s -w" "$module@$version"
}

build_once opa "$opa"
