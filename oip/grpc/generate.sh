#!/usr/bin/env bash
# generate.sh regenerates the Go stubs of the Open Inference Protocol gRPC
# service (package inference, service GRPCInferenceService) into
# oip/grpc/inferencepb from grpc_predict_v2.proto as shipped in the Go module
# github.com/kserve/kserve@v0.20.0. It is what `make generate` runs.
#
# Reproducible: every generator is pinned (below) and the proto is taken from
# a pinned module version, so two runs give byte-identical files.
# Idempotent: tools are installed once into a cache outside the repository
# ($CARBONGATE_TOOLS, default ${XDG_CACHE_HOME:-$HOME/.cache}/carbongate/tools)
# and reused when their version matches.
#
# Pinned versions. Change them together with oip/grpc/generate_test.go,
# which checks that the committed stubs name these versions.
#   protoc              3.21.12  (Debian bookworm package protobuf-compiler)
#   protoc-gen-go       v1.36.12 (= google.golang.org/protobuf in go.mod)
#   protoc-gen-go-grpc  v1.6.2
#   proto source        github.com/kserve/kserve@v0.20.0 docs/predict-api/v2/grpc_predict_v2.proto
set -euo pipefail

PROTOC_VERSION=3.21.12
PROTOC_GEN_GO_VERSION=v1.36.12
PROTOC_GEN_GO_GRPC_VERSION=v1.6.2
KSERVE_MODULE=github.com/kserve/kserve
KSERVE_VERSION=v0.20.0
PROTO_PATH=docs/predict-api/v2/grpc_predict_v2.proto
PROTO_FILE=grpc_predict_v2.proto
GO_PACKAGE=github.com/carbongate/carbongate/oip/grpc/inferencepb

GO=${GO:-go}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out_dir="$here/inferencepb"
tools=${CARBONGATE_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/carbongate/tools}

log() { printf 'generate: %s\n' "$*" >&2; }
die() { printf 'generate: error: %s\n' "$*" >&2; exit 1; }

# --- protoc (from Debian) ------------------------------------------------
protoc_version() { protoc --version 2>/dev/null | awk '{print $2}'; }
if ! command -v protoc >/dev/null 2>&1; then
	sudo=""
	if [ "$(id -u)" -ne 0 ]; then
		command -v sudo >/dev/null 2>&1 || die "protoc is missing and installing it needs root: apt-get install -y protobuf-compiler"
		sudo="sudo"
	fi
	if ! apt-cache show protobuf-compiler >/dev/null 2>&1; then
		log "protobuf-compiler not in the apt lists: running apt-get update"
		$sudo apt-get update -qq
	fi
	log "installing protobuf-compiler (apt-get)"
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq protobuf-compiler >/dev/null
fi
got=$(protoc_version)
[ "$got" = "$PROTOC_VERSION" ] ||
	die "protoc is $got, want $PROTOC_VERSION (the version named in the committed stubs); install libprotoc $PROTOC_VERSION (Debian bookworm protobuf-compiler)"
log "protoc $got"

# --- protoc-gen-go and protoc-gen-go-grpc (go install, pinned) ----------
# Each version gets its own directory, so a version bump never reuses a stale
# binary and an installed version is never rebuilt.
install_tool() { # pkg version binary -> prints the binary's path
	local pkg=$1 version=$2 bin=$3 dir="$tools/$3@$2"
	if [ ! -x "$dir/$bin" ]; then
		log "installing $pkg@$version into $dir"
		mkdir -p "$dir"
		(cd "$dir" && GOBIN="$dir" GOFLAGS=-mod=mod GOTOOLCHAIN=local "$GO" install "$pkg@$version")
	fi
	printf '%s\n' "$dir/$bin"
}
gen_go=$(install_tool google.golang.org/protobuf/cmd/protoc-gen-go "$PROTOC_GEN_GO_VERSION" protoc-gen-go)
gen_go_grpc=$(install_tool google.golang.org/grpc/cmd/protoc-gen-go-grpc "$PROTOC_GEN_GO_GRPC_VERSION" protoc-gen-go-grpc)
log "$("$gen_go" --version)"
log "$("$gen_go_grpc" --version)"

# --- the proto, from the pinned kserve module ----------------------------
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Run outside any module so that go.mod and go.sum are never touched.
mod_dir=$(cd "$work" && GOFLAGS= GO111MODULE=on "$GO" mod download -json "$KSERVE_MODULE@$KSERVE_VERSION" |
	sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
[ -n "$mod_dir" ] && [ -f "$mod_dir/$PROTO_PATH" ] || die "cannot find $PROTO_PATH in $KSERVE_MODULE@$KSERVE_VERSION"
mkdir -p "$work/proto" "$work/out"
cp "$mod_dir/$PROTO_PATH" "$work/proto/$PROTO_FILE"
chmod u+w "$work/proto/$PROTO_FILE"

# The proto has no go_package: the M options give it one.
protoc \
	--proto_path="$work/proto" \
	--plugin=protoc-gen-go="$gen_go" \
	--plugin=protoc-gen-go-grpc="$gen_go_grpc" \
	--go_out="$work/out" \
	--go_opt=paths=source_relative \
	--go_opt="M$PROTO_FILE=$GO_PACKAGE" \
	--go-grpc_out="$work/out" \
	--go-grpc_opt=paths=source_relative \
	--go-grpc_opt="M$PROTO_FILE=$GO_PACKAGE" \
	"$PROTO_FILE"

# Replace the generated files (and only them) in one step.
mkdir -p "$out_dir"
rm -f "$out_dir"/*.pb.go
cp "$work/out"/*.pb.go "$out_dir"/
log "wrote $(cd "$out_dir" && ls *.pb.go | tr '\n' ' ')into oip/grpc/inferencepb"
