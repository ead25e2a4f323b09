#!/usr/bin/env bash
# kserve.sh — make sure KServe's controller (cmd/manager) at a pinned
# version is built and print the directory holding it on stdout (logs go to
# stderr): kserve-manager, plus what the KServe interop test applies from
# KServe's module: its CRDs (crds/) and the inferenceservice-config
# ConfigMap (inferenceservice-config.yaml).
#
# It comes from the small tools module in test/setup/kserve/ (not the
# product's go.mod): github.com/kserve/kserve with cmd/manager as a tool and
# the replace lines kserve's own go.mod carries (controller-runtime and the
# k8s.io modules pinned below what its dependencies require). Only the Go
# module proxy is used. The output goes to
#   ${XDG_CACHE_HOME:-$HOME/.cache}/carbongate/kserve-<version>-<first 12 hex of sha256(tools module files)>
# so a changed pin builds a new directory and reruns return at once. A stamp
# file is written only after everything is in place; a lock keeps concurrent
# callers from building twice. The build runs at low priority (nice 10).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$here/lib.sh"
mod="$here/kserve"
m=github.com/kserve/kserve
version="$(tools_module_version "$mod" "$m")"
key="$(tools_module_key "$mod")"
dir="$cache_root/kserve-$version-$key"

built() { [ -f "$dir/.carbongate-built" ]; }

build() {
  local out="$1/kserve-$version-$key" src
  echo "kserve.sh: building KServe's manager $version, several minutes, once"
  renice -n 10 $$ >/dev/null
  mkdir -p "$out"
  tools_build "$mod" "-s -w" "$out/kserve-manager" "$m/cmd/manager"
  src="$(cd "$mod" && GOWORK=off GOFLAGS=-mod=readonly go list -m -f '{{.Dir}}' "$m")"
  cp -r "$src/config/crd/full" "$out/crds"
  cp "$src/config/configmap/inferenceservice.yaml" "$out/inferenceservice-config.yaml"
  chmod -R u+w "$out"
  "$out/kserve-manager" --help 2>&1 | grep -q -- -webhook-port ||
    { echo "kserve.sh: kserve-manager does not run"; exit 1; }
  touch "$out/.carbongate-built"
}

build_once "kserve-$version-$key" "$dir"
