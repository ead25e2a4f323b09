#!/usr/bin/env bash
# venv.sh [requirements-file] — create or reuse the Python venv for a pinned
# requirements file and print its path on stdout (logs go to stderr).
#
# The venv lives outside the clone, in
#   ${XDG_CACHE_HOME:-$HOME/.cache}/carbongate/venv-<first 12 hex of sha256(requirements)>
# so editing the pins makes a new venv and reruns are instant. A stamp file is
# written only after a successful install; a venv without it is rebuilt. A lock
# keeps concurrent callers (parallel test packages) from building it twice.
#
# Default requirements file: test/python/requirements-kserve.txt.
# PYTHON selects the interpreter (default python3; the pins need 3.10–3.12).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
req="${1:-$here/../python/requirements-kserve.txt}"
[ -f "$req" ] || { echo "venv.sh: no requirements file $req" >&2; exit 2; }
req="$(cd "$(dirname "$req")" && pwd)/$(basename "$req")"
python="${PYTHON:-python3}"

key="$(sha256sum "$req" | cut -c1-12)"
root="${XDG_CACHE_HOME:-$HOME/.cache}/carbongate"
venv="$root/venv-$key"
stamp="$venv/.carbongate-installed"

if [ -f "$stamp" ]; then
  echo "$venv"
  exit 0
fi

mkdir -p "$root"
exec 9>"$root/venv-$key.lock"
flock 9
if [ ! -f "$stamp" ]; then
  start=$SECONDS
  echo "venv.sh: building $venv from $(basename "$req")" >&2
  rm -rf "$venv"
  "$python" -m venv "$venv" >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    --no-input --requirement "$req" >&2
  cp "$req" "$venv/requirements.txt"
  touch "$stamp"
  echo "venv.sh: built $venv in $((SECONDS - start))s" >&2
fi
echo "$venv"
