#!/usr/bin/env bash
# node.sh — make sure everything a real test cluster needs beyond kube.sh's
# control plane is here, and print the directory holding it on stdout (logs go
# to stderr). test/cluster reads it from CARBONGATE_NODE_DIR.
#
# The directory holds, under bin/:
#   kubelet, kube-controller-manager, kube-scheduler, kube-proxy, kubectl —
#     built from the same tools module as kube.sh (test/setup/kube/, one pin of
#     k8s.io/kubernetes) and stamped with its version like kube-apiserver;
#   containerd, containerd-shim-runc-v2, ctr — containerd v2 from the Go module
#     proxy (a maintained release that kubelet 1.34 supports; Debian's 1.6 is
#     past its end of life and its package installs a system daemon);
#   kwok — fake nodes for further regions, with its stage files under
#     kwok-stages/;
# and pause.oci.tar: the pods' sandbox image localhost/carbongate/pause:KEY,
# a static binary FROM scratch (no registry is reachable here), built with
# the Podman of podman.sh.
# Debian's runc, containernetworking-plugins (/usr/lib/cni) and iptables are
# installed when absent. Everything is cached under
#   ${XDG_CACHE_HOME:-$HOME/.cache}/carbongate/node-<key>
# keyed by the tools module and the versions below, so kube.sh's directory
# (what envtest reads) does not grow by these binaries. The cold build takes
# about 15 min of CPU (kubelet alone 7) and 1.8 GB of memory.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$here/lib.sh"
mod="$here/kube"
containerd_version="v2.2.9"
kwok_version="v0.8.0"
k8s_version="$(tools_module_version "$mod" k8s.io/kubernetes)"
key="$( (tools_module_key "$mod"; echo "$containerd_version $kwok_version"; sed -n '/^pause_image()/,/^}/p' "$0") |
  sha256sum | cut -c1-12)"
dir="$cache_root/node-$key"

debian_packages() {
  local missing=()
  command -v runc >/dev/null || missing+=(runc)
  [ -x /usr/lib/cni/bridge ] || missing+=(containernetworking-plugins)
  command -v iptables >/dev/null || missing+=(iptables)
  [ ${#missing[@]} = 0 ] && return 0
  exec 8>"$cache_root/node-apt.lock"
  flock 8
  echo "node.sh: installing ${missing[*]} from Debian's packages" >&2
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
  exec 8>&-
}

built() { [ -f "$dir/.carbongate-built" ]; }

# pause_image OUT builds the sandbox image into OUT/pause.oci.tar.
pause_image() {
  local out="$1" ctx podman tag="localhost/carbongate/pause:$key"
  ctx="$(mktemp -d)"
  tools_build "$mod" "-s -w" "$ctx/pause" ./pause
  printf 'FROM scratch\nCOPY pause /pause\nUSER 65535:65535\nENTRYPOINT ["/pause"]\n' > "$ctx/Containerfile"
  podman="$("$here/podman.sh")"
  "$podman" build -q -t "$tag" "$ctx"
  "$podman" save --format oci-archive -o "$out/pause.oci.tar" "$tag"
  "$podman" rmi "$tag" >/dev/null
  rm -rf "$ctx"
  echo "$tag" > "$out/pause.image"
}

build() {
  local out="$1/node-$key" minor v ldflags c kwok_src
  mkdir -p "$out/bin" "$out/kwok-stages"
  echo "node.sh: building kubelet, kube-controller-manager, kube-scheduler, kube-proxy, kubectl $k8s_version, containerd $containerd_version and kwok $kwok_version (about 15 min of CPU, once)"
  minor="${k8s_version#v1.}"
  minor="${minor%%.*}"
  v=k8s.io/component-base/version
  ldflags="-s -w -X $v.gitVersion=$k8s_version -X $v.gitMajor=1 -X $v.gitMinor=$minor -X $v.gitTreeState=clean"
  pause_image "$out"
  for c in containerd containerd-shim-runc-v2 ctr; do
    echo "node.sh: $c"
    go_install "$out/bin" "-s -w -X github.com/containerd/containerd/v2/version.Version=$containerd_version" \
      "github.com/containerd/containerd/v2/cmd/$c@$containerd_version"
  done
  echo "node.sh: kwok"
  go_install "$out/bin" "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$kwok_version"
  kwok_src="$(cd "$out" && GOWORK=off go mod download -json "sigs.k8s.io/kwok@$kwok_version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')"
  cp "$kwok_src/kustomize/stage/node/fast/node-initialize.yaml" \
    "$kwok_src/kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml" \
    "$kwok_src"/kustomize/stage/pod/fast/*.yaml "$out/kwok-stages/"
  rm -f "$out/kwok-stages/kustomization.yaml"
  chmod -R u+w "$out/kwok-stages"
  for c in kubelet kube-controller-manager kube-scheduler kube-proxy kubectl; do
    echo "node.sh: $c"
    tools_build "$mod" "$ldflags" "$out/bin/$c" "k8s.io/kubernetes/cmd/$c"
  done
  "$out/bin/kubelet" --version | grep -qx "Kubernetes $k8s_version" || { echo "node.sh: kubelet is not $k8s_version"; exit 1; }
  touch "$out/.carbongate-built"
}

mkdir -p "$cache_root"
debian_packages
build_once "node-$key" "$dir"
