#!/usr/bin/env bash
# kube.sh — make sure a kube-apiserver, a kubectl and an etcd at pinned
# versions are built and print the directory holding them on stdout (logs go
# to stderr).
# That directory is what envtest reads from KUBEBUILDER_ASSETS.
#
# Both come from the small tools module in test/setup/kube/ (not the product's
# go.mod): k8s.io/kubernetes v1.34.4 with the 31 staging modules its own go.mod
# replaces pinned to their published v0.34.4, and etcd's own entry point
# (go.etcd.io/etcd/server/v3 etcdmain, v3.6.4). Only the Go module proxy is
# used. kube-apiserver is stamped with its release version (unstamped it
# reports v0.0.0-master and kubectl refuses to parse it). The binaries go to
#   ${XDG_CACHE_HOME:-$HOME/.cache}/carbongate/kube-<first 12 hex of sha256(tools module files)>
# so a changed pin builds a new directory and reruns return at once. A stamp
# file is written only after both binaries are built; a lock keeps concurrent
# callers from building twice. The cold build takes about 7 min of CPU and
# 2.1 GB of memory (go build of kube-apiserver).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$here/lib.sh"
mod="$here/kube"
k8s_version="$(tools_module_version "$mod" k8s.io/kubernetes)"
key="$(tools_module_key "$mod")"
dir="$cache_root/kube-$key"

built() { [ -f "$dir/.carbongate-built" ] && [ -x "$dir/kubectl" ]; }

build() {
  local out="$1/kube-$key" minor v ldflags got
  echo "kube.sh: building kube-apiserver $k8s_version, kubectl and etcd (several minutes, once)"
  minor="${k8s_version#v1.}"
  minor="${minor%%.*}"
  v=k8s.io/component-base/version
  ldflags="-s -w -X $v.gitVersion=$k8s_version -X $v.gitMajor=1 -X $v.gitMinor=$minor -X $v.gitTreeState=clean"
  tools_build "$mod" "-s -w" "$out/etcd" ./etcd
  tools_build "$mod" "$ldflags" "$out/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
  # make kube-up's kubectl where the machine has none of 1.32 or later.
  tools_build "$mod" "$ldflags" "$out/kubectl" k8s.io/kubernetes/cmd/kubectl
  got="$("$out/kube-apiserver" --version)"
  [ "$got" = "Kubernetes $k8s_version" ] || { echo "kube.sh: kube-apiserver reports '$got'"; exit 1; }
  "$out/etcd" --version
  touch "$out/.carbongate-built"
}

build_once "kube-$key" "$dir"
