#!/usr/bin/env bash
# coredns.sh — make sure CoreDNS at a pinned version is built and print its
# path on stdout (logs go to stderr). The real test cluster (test/cluster,
# CARBONGATE_COREDNS) runs it on the host as the cluster's DNS server behind
# the kube-dns Service.
#
# It comes from the small tools module in test/setup/coredns/ (not the
# product's go.mod): github.com/coredns/coredns with a main of its own that
# links only the plugins the cluster's Corefile uses (kubernetes, forward,
# cache, errors, bind, ready), as CoreDNS's embedding example does; only the
# Go module proxy is used, no replace lines. Cold, about 160 s of CPU (most
# of it the kubernetes plugin's client-go); a 50 MB binary. It goes to
#   ${XDG_CACHE_HOME:-$HOME/.cache}/carbongate/coredns-<version>-<first 12 hex of sha256(tools module files)>/coredns
# so a changed pin builds a new one and reruns return at once; a lock keeps
# concurrent callers from building twice.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$here/lib.sh"
mod="$here/coredns"
m=github.com/coredns/coredns
version="$(tools_module_version "$mod" "$m")"
key="$(tools_module_key "$mod")"
bin="$cache_root/coredns-$version-$key/coredns"

built() { [ -x "$bin" ]; }

build() {
  local p out
  echo "coredns.sh: building CoreDNS $version (kubernetes, forward, cache, errors, bind, ready), once"
  renice -n 10 $$ >/dev/null
  tools_build "$mod" "-s -w" "$1/coredns" .
  out="$("$1/coredns" -version)"
  [[ "$out" == *"CoreDNS-${version#v}"* ]] || { echo "coredns.sh: coredns -version says $out, want $version"; exit 1; }
  out="$("$1/coredns" -plugins)"
  for p in kubernetes forward cache errors bind ready; do
    grep -qx "$p" <<<"$out" || { echo "coredns.sh: coredns lacks the $p plugin"; exit 1; }
  done
}

build_once "coredns-$version-$key" "$bin"
