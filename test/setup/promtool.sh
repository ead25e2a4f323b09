#!/usr/bin/env bash
# promtool.sh — make sure Prometheus' promtool at a pinned version is built
# and print the path of its binary on stdout (logs go to stderr).
#
# promtool is built from source with
#   go install github.com/prometheus/prometheus/cmd/promtool@VERSION
# (the Go module proxy only: no release download; v0.316.0 is the Go module
# version of Prometheus 3.16.0) into
#   ${XDG_CACHE_HOME:-$HOME/.cache}/carbongate/promtool-VERSION/promtool
# stamped with its release version as Prometheus' own build does. A rerun
# with that version already built returns at once; a lock keeps concurrent
# callers from building it twice. PROMTOOL_VERSION overrides the pin.
set -euo pipefail

version="${PROMTOOL_VERSION:-v0.316.0}"
module="github.com/prometheus/prometheus"
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
promtool="$cache_root/promtool-$version/promtool"

# The release the module version stands for: Prometheus 3.X.Y is published
# as the Go module version v0.3XX.Y (v0.316.0 is 3.16.0).
release() {
  local v="${version#v0.}" minor patch
  minor="${v%%.*}"
  patch="${v#*.}"
  echo "${minor:0:1}.$((10#${minor:1})).$patch"
}

built() {
  [ -x "$promtool" ] && "$promtool" --version 2>/dev/null | grep -q "^promtool, version $(release) "
}

build() {
  local v=github.com/prometheus/common/version
  echo "promtool.sh: building promtool $(release) ($module $version) from the Go module proxy"
  go_install "$1" "-s -w -X $v.Version=$(release) -X $v.Branch=HEAD -X $v.Revision=$version" "$module/cmd/promtool@$version"
}

build_once "promtool-$version" "$promtool"
