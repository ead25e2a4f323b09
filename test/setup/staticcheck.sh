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
root="${XDG_CACHE_HOME:-$HOME/.cache}/carbongate"
bin="$root/bin"
sc="$bin/staticcheck"

built() {
  [ -x "$sc" ] && "$sc" -version 2>/dev/null | grep -qF "(${version#v})"
}

if built; then
  echo "$sc"
  exit 0
fi

mkdir -p "$bin"
exec 9>"$root/staticcheck-install.lock"
flock 9
if ! built; then
  start=$SECONDS
  echo "staticcheck.sh: building staticcheck $version from the Go module proxy" >&2
  tmp="$(mktemp -d "$root/staticcheck-build.XXXXXX")"
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && CGO_ENABLED=0 GOBIN="$tmp" go install -trimpath "$module@$version") >&2
  mv -f "$tmp/staticcheck" "$sc"
  built || { echo "staticcheck.sh: $sc does not report $version" >&2; exit 1; }
  echo "staticcheck.sh: built staticcheck $version in $((SECONDS - start))s" >&2
fi
echo "$sc"
