#!/usr/bin/env bash
# build.sh — build the images of carbongate, carbonserve and carbonctl from
# deploy/container/Containerfile and print their names, one a line.
#
#   CONTAINER   the build command: podman (default) or docker
#   REGISTRY    image name prefix, default ghcr.io/carbongate (the Helm chart's)
#   VERSION     image tag and the binaries' --version, default v<appVersion>
#               of deploy/helm/carbongate/Chart.yaml: chart, images and
#               binaries take their version from that one line
#
# The binaries are static (CGO_ENABLED=0) with the time-zone database
# compiled in (-tags timetzdata); the context also gets the build machine's
# CA bundle and a passwd/group naming the nonroot user 65532.
set -euo pipefail
cd "$(dirname "$0")/../.."

container="${CONTAINER:-podman}"
registry="${REGISTRY:-ghcr.io/carbongate}"
version="${VERSION:-v$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' deploy/helm/carbongate/Chart.yaml)}"
revision="$(git rev-parse HEAD 2>/dev/null || echo unknown)"
created="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
certs=/etc/ssl/certs/ca-certificates.crt
[ -r "$certs" ] || { echo "build.sh: no CA bundle at $certs (Debian: apt-get install ca-certificates)" >&2; exit 1; }

ctx="$(mktemp -d)"
trap 'rm -rf "$ctx"' EXIT
pkg=github.com/carbongate/carbongate/cmd/internal/version
CGO_ENABLED=0 go build -trimpath -tags timetzdata -o "$ctx/" \
  -ldflags "-s -w -X $pkg.version=$version -X $pkg.commit=$revision -X $pkg.date=$created" \
  ./cmd/carbongate ./cmd/carbonserve ./cmd/carbonctl
cp "$certs" "$ctx/ca-certificates.crt"
echo 'nonroot:x:65532:65532:nonroot:/nonexistent:/sbin/nologin' > "$ctx/passwd"
echo 'nonroot:x:65532:' > "$ctx/group"

for b in carbongate carbonserve carbonctl; do
  "$container" build --quiet -f deploy/container/Containerfile --target "$b" \
    --build-arg VERSION="$version" --build-arg REVISION="$revision" --build-arg CREATED="$created" \
    -t "$registry/$b:$version" "$ctx" >&2
  echo "$registry/$b:$version"
done
