#!/usr/bin/env bash
# otelcol.sh — make sure an OpenTelemetry Collector at a pinned version is
# built and print its path on stdout (logs go to stderr). The tracing tests
# export carbongate's and carbonserve's spans to it over OTLP and read them
# back from its file exporter.
#
# It comes from the small tools module in test/setup/otelcol/ (not the
# product's go.mod): go.opentelemetry.io/collector/otelcol with only the OTLP
# receiver and the contrib file exporter, only what the tests need; it builds
# from the Go module proxy alone in about 2 min of CPU (empty build cache,
# modules already downloaded). The binary goes to
#   ${XDG_CACHE_HOME:-$HOME/.cache}/carbongate/otelcol-<version>-<first 12 hex of sha256(tools module files)>/otelcol
# so a changed pin builds a new one and reruns return at once; a lock keeps
# concurrent callers from building twice.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$here/lib.sh"
mod="$here/otelcol"
version="$(tools_module_version "$mod" go.opentelemetry.io/collector/otelcol)"
key="$(tools_module_key "$mod")"
bin="$cache_root/otelcol-$version-$key/otelcol"

built() { [ -x "$bin" ]; }

build() {
  echo "otelcol.sh: building the OpenTelemetry Collector $version (OTLP receiver, file exporter), once"
  tools_build "$mod" "-s -w" "$1/otelcol" .
  "$1/otelcol" components >/dev/null
}

build_once "otelcol-$version-$key" "$bin"
