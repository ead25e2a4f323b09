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
root="${XDG_CACHE_HOME:-$HOME/.cache}/carbongate"
bin="$root/bin"
opa="$bin/opa"

built() {
  [ -x "$opa" ] && [ "$("$opa" version 2>/dev/null | sed -n 's/^Version: //p')" = "${version#v}" ]
}

if built; then
  echo "$opa"
  exit 0
fi

mkdir -p "$bin"
exec 9>"$root/opa-install.lock"
flock 9
if ! built; then
  start=$SECONDS
  echo "opa.sh: building OPA $version from the Go module proxy" >&2
  tmp="$(mktemp -d "$root/opa-build.XXXXXX")"
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && CGO_ENABLED=0 GOBIN="$tmp" go install -trimpath -ldflags "-s -w" "$module@$version") >&2
  mv -f "$tmp/opa" "$opa"
  built || { echo "opa.sh: $opa does not report $version" >&2; exit 1; }
  echo "opa.sh: built OPA $version in $((SECONDS - start))s" >&2
fi
echo "$opa"
