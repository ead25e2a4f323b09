#!/usr/bin/env bash
# ccf.sh — make sure the pinned Cloud Carbon Footprint npm tarballs that
# forecast/instances/gen and forecast/regions/gen read are cached, and print their directory on
# stdout (logs go to stderr).
#
# The tarballs come from the npm registry with `npm pack` into
#   ${XDG_CACHE_HOME:-$HOME/.cache}/carbongate/ccf
# A rerun with them present returns at once. The generator checks each
# against the integrity pinned in forecast/internal/pkgdata/npm.go.
set -euo pipefail

pkgs=(@cloud-carbon-footprint/aws@0.15.0 @cloud-carbon-footprint/azure@1.8.0 @cloud-carbon-footprint/core@0.17.3)
dir="${XDG_CACHE_HOME:-$HOME/.cache}/carbongate/ccf"
mkdir -p "$dir"
exec 9>"$dir/.lock"
flock 9
for p in "${pkgs[@]}"; do
  name="${p%@*}" version="${p##*@}"
  file="$(echo "${name#@}" | tr / -)-$version.tgz"
  if [ ! -s "$dir/$file" ]; then
    echo "ccf.sh: npm pack $p" >&2
    (cd "$dir" && npm pack "$p" --silent >/dev/null)
    [ -s "$dir/$file" ] || { echo "ccf.sh: $file missing after npm pack" >&2; exit 1; }
  fi
done
echo "$dir"
