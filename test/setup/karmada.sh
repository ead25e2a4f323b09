#!/usr/bin/env bash
# karmada.sh — make sure Karmada's control-plane components at a pinned
# version are built and print the directory holding them on stdout (logs go
# to stderr): karmada-aggregated-apiserver, karmada-controller-manager,
# karmada-scheduler and karmada-webhook, plus what the federation tests
# apply from Karmada's module: its CRDs (crds/) and its own webhooks'
# configuration (webhook-configuration.yaml).
#
# They come from the small tools module in test/setup/karmada/ (not the
# product's go.mod): github.com/karmada-io/karmada with the four commands
# as tools. Karmada's go.mod needs no replace lines, and only the Go module
# proxy is used. The binaries are stamped with the release version. Karmada's
# API server is the kube-apiserver of test/setup/kube.sh, and the
# kube-controller-manager that runs namespace and garbage collection on it is
# test/setup/node.sh's. The output goes to
#   ${XDG_CACHE_HOME:-$HOME/.cache}/carbongate/karmada-<version>-<first 12 hex of sha256(tools module files)>
# so a changed pin builds a new directory and reruns return at once. A stamp
# file is written only after everything is in place; a lock keeps concurrent
# callers from building twice. The build runs at low priority (nice 10): cold,
# about 340 s of CPU (the aggregated API server 300 of it) and 14 min wall on
# 2 busy cores; 243 MB of output.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$here/lib.sh"
mod="$here/karmada"
m=github.com/karmada-io/karmada
version="$(tools_module_version "$mod" "$m")"
key="$(tools_module_key "$mod")"
dir="$cache_root/karmada-$version-$key"
components=(aggregated-apiserver controller-manager scheduler webhook)

built() { [ -f "$dir/.carbongate-built" ]; }

build() {
  local out="$1/karmada-$version-$key" src c ldflags
  echo "karmada.sh: building Karmada $version (${components[*]}), several minutes, once"
  renice -n 10 $$ >/dev/null
  mkdir -p "$out"
  ldflags="-s -w -X $m/pkg/version.gitVersion=$version -X $m/pkg/version.gitTreeState=clean"
  for c in "${components[@]}"; do
    tools_build "$mod" "$ldflags" "$out/karmada-$c" "$m/cmd/$c"
  done
  src="$(cd "$mod" && GOWORK=off GOFLAGS=-mod=readonly go list -m -f '{{.Dir}}' "$m")"
  cp -r "$src/charts/karmada/_crds/bases" "$out/crds"
  cp "$src/artifacts/deploy/webhook-configuration.yaml" "$out/webhook-configuration.yaml"
  chmod -R u+w "$out"
  "$out/karmada-scheduler" version | grep -qF "GitVersion:\"$version\"" ||
    { echo "karmada.sh: karmada-scheduler does not report $version"; exit 1; }
  touch "$out/.carbongate-built"
}

build_once "karmada-$version-$key" "$dir"
