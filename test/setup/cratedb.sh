#!/usr/bin/env bash
# cratedb.sh — make sure the CrateDB server the tests run is unpacked and
# print its install dir (CRATE_HOME) on stdout (logs go to stderr).
#
# The server comes from a tarball beside the clone (no registry ships a
# CrateDB server): $CARBONGATE_CRATEDB_TARBALL, default
#   <clone>/../shared/peers/cratedb/crate-6.4.3-built.tar.gz
# It is unpacked once into
#   ${XDG_CACHE_HOME:-$HOME/.cache}/carbongate/cratedb-<first 12 of its sha256>
# under a lock; a rerun with that dir complete returns at once. Unpacking
# removes the plugin folders whose code the build leaves out (start-up
# fails with them) and links jdk -> a Java 25 or newer (bin/crate runs
# $CRATE_HOME/jdk/bin/java): $CARBONGATE_CRATEDB_JAVA_HOME, else $JAVA_HOME,
# else the newest /usr/lib/jvm/* (Debian's layout) whose release file says
# 25 or more.
#
# The tests only use the binaries: each test binary runs its own server
# with its data in a temp dir (test/services/cratedb.go).
set -euo pipefail

clone="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
tarball="${CARBONGATE_CRATEDB_TARBALL:-$clone/../shared/peers/cratedb/crate-6.4.3-built.tar.gz}"
min_java=25

if [ ! -f "$tarball" ]; then
  echo "cratedb.sh: no CrateDB tarball at $tarball;" >&2
  echo "cratedb.sh: put the shared peers beside the clone or set CARBONGATE_CRATEDB_TARBALL" >&2
  exit 1
fi

java_major() { # prints the major version in $1/release, or nothing
  sed -n 's/^JAVA_VERSION="\([0-9]*\).*/\1/p' "$1/release" 2>/dev/null
}

find_java() {
  local d v best="" best_v=0
  for d in "${CARBONGATE_CRATEDB_JAVA_HOME:-}" "${JAVA_HOME:-}"; do
    v="$(java_major "$d")"
    if [ -n "$d" ] && [ -x "$d/bin/java" ] && [ "${v:-0}" -ge "$min_java" ]; then
      echo "$d"
      return 0
    fi
  done
  for d in /usr/lib/jvm/*; do
    v="$(java_major "$d")"
    if [ -x "$d/bin/java" ] && [ "${v:-0}" -ge "$min_java" ] && [ "$v" -gt "$best_v" ]; then
      best="$d" best_v="$v"
    fi
  done
  [ -n "$best" ] && echo "$best"
}

root="${XDG_CACHE_HOME:-$HOME/.cache}/carbongate"
mkdir -p "$root"
# Hashing 75 MB takes a moment; the sum is cached by size and mtime.
stamp="$(stat -c '%s-%Y' "$tarball")"
sumfile="$root/cratedb-tarball.sha256"
sum=""
if [ -f "$sumfile" ] && [ "$(cut -d' ' -f1 "$sumfile")" = "$stamp" ] &&
  [ "$(cut -d' ' -f3- "$sumfile")" = "$tarball" ]; then
  sum="$(cut -d' ' -f2 "$sumfile")"
fi
if [ -z "$sum" ]; then
  sum="$(sha256sum "$tarball" | cut -d' ' -f1)"
  echo "$stamp $sum $tarball" >"$sumfile.$$" && mv -f "$sumfile.$$" "$sumfile"
fi
home="$root/cratedb-${sum:0:12}"

installed() { [ -f "$home/.done" ] && [ -x "$home/jdk/bin/java" ]; }

if installed; then
  echo "$home"
  exit 0
fi

exec 9>"$root/cratedb-install.lock"
flock 9
if ! installed; then
  start=$SECONDS
  java="$(find_java)" || {
    echo "cratedb.sh: CrateDB needs Java $min_java or newer: none found in" \
      "CARBONGATE_CRATEDB_JAVA_HOME, JAVA_HOME or /usr/lib/jvm/*" >&2
    exit 1
  }
  echo "cratedb.sh: unpacking $(basename "$tarball") into $home (Java: $java)" >&2
  rm -rf "$home" "$home.tmp"
  mkdir -p "$home.tmp"
  tar -xzf "$tarball" -C "$home.tmp" --strip-components=1
  rm -rf "$home.tmp/plugins/copy-azure" "$home.tmp/plugins/copy-s3" \
    "$home.tmp/plugins/es-repository-azure" "$home.tmp/plugins/repository-gcs"
  ln -sfn "$java" "$home.tmp/jdk"
  # The server runs as an unprivileged user: it must read everything here.
  chmod -R a+rX "$home.tmp"
  touch "$home.tmp/.done"
  mv "$home.tmp" "$home"
  echo "cratedb.sh: unpacked in $((SECONDS - start))s" >&2
fi
installed || { echo "cratedb.sh: $home is incomplete" >&2; exit 1; }
echo "$home"
