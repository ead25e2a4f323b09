#!/usr/bin/env bash
# helm.sh — make sure the pinned Helm v3 is built and print the path of its
# binary on stdout (logs go to stderr).
#
# Helm is built from source with `go install helm.sh/helm/v3/cmd/helm@VERSION`
# (the Go module proxy only: no release download) into
#   ${XDG_CACHE_HOME:-$HOME/.cache}/carbongate/bin/helm
# stamped like an upstream release build: its own version, and the default
# Kubernetes version of `helm template`/`helm lint` taken from the client-go
# version in Helm's go.mod (what Helm's Makefile does). A rerun with that
# version already built returns at once; a lock keeps concurrent callers from
# building it twice. HELM_VERSION overrides the pin.
set -euo pipefail

version="${HELM_VERSION:-v3.22.0}"
module="helm.sh/helm/v3"
root="${XDG_CACHE_HOME:-$HOME/.cache}/carbongate"
bin="$root/bin"
helm="$bin/helm"

built() {
  [ -x "$helm" ] && [ "$("$helm" version --template '{{.Version}}' 2>/dev/null)" = "$version" ]
}

if built; then
  echo "$helm"
  exit 0
fi

mkdir -p "$bin"
exec 9>"$root/helm-install.lock"
flock 9
if ! built; then
  start=$SECONDS
  echo "helm.sh: building Helm $version from the Go module proxy" >&2
  tmp="$(mktemp -d "$root/helm-build.XXXXXX")"
  trap 'rm -rf "$tmp"' EXIT
  # Outside any module (and workspace): the caller's go.mod is neither read nor touched.
  gomod="$(cd "$tmp" && GOWORK=off go mod download -json "$module@$version" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')"
  [ -f "$gomod" ] || { echo "helm.sh: go mod download $module@$version gave no go.mod" >&2; exit 1; }
  # client-go v0.MINOR.x pairs with Kubernetes 1.MINOR.
  minor="$(sed -n 's/^\tk8s.io\/client-go v0\.\([0-9]*\)\..*/\1/p' "$gomod" | head -1)"
  [ -n "$minor" ] || { echo "helm.sh: no k8s.io/client-go in $gomod" >&2; exit 1; }
  ldflags="-s -w -X $module/internal/version.version=$version"
  for pkg in pkg/chartutil pkg/lint/rules; do
    ldflags+=" -X $module/$pkg.k8sVersionMajor=1 -X $module/$pkg.k8sVersionMinor=$minor"
  done
  (cd "$tmp" && GOWORK=off CGO_ENABLED=0 GOBIN="$tmp" go install -trimpath -ldflags "$ldflags" "$module/cmd/helm@$version") >&2
  mv -f "$tmp/helm" "$helm"
  built || { echo "helm.sh: $helm does not report $version" >&2; exit 1; }
  echo "helm.sh: built Helm $version (Kubernetes 1.$minor defaults) in $((SECONDS - start))s" >&2
fi
echo "$helm"
