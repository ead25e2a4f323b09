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
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
helm="$cache_root/bin/helm"

built() {
  [ -x "$helm" ] && [ "$("$helm" version --template '{{.Version}}' 2>/dev/null)" = "$version" ]
}

build() {
  local gomod minor ldflags pkg
  echo "helm.sh: building Helm $version from the Go module proxy"
  gomod="$(cd "$1" && GOWORK=off go mod download -json "$module@$version" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')"
  [ -f "$gomod" ] || { echo "helm.sh: go mod download $module@$version gave no go.mod"; exit 1; }
  # client-go v0.MINOR.x pairs with Kubernetes 1.MINOR.
  minor="$(sed -n 's/^\tk8s.io\/client-go v0\.\([0-9]*\)\..*/\1/p' "$gomod" | head -1)"
  [ -n "$minor" ] || { echo "helm.sh: no k8s.io/client-go in $gomod"; exit 1; }
  ldflags="-s -w -X $module/internal/version.version=$version"
  for pkg in pkg/chartutil pkg/lint/rules; do
    ldflags+=" -X $module/$pkg.k8sVersionMajor=1 -X $module/$pkg.k8sVersionMinor=$minor"
  done
  go_install "$1" "$ldflags" "$module/cmd/helm@$version"
  echo "helm.sh: Helm $version with Kubernetes 1.$minor defaults"
}

build_once helm "$helm"
