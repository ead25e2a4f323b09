#!/usr/bin/env bash
# postgres.sh — make sure a PostgreSQL server (postgres and initdb) is
# installed and print its bin directory on stdout (logs go to stderr).
#
# Order of search: $CARBONGATE_PG_BIN if it holds both binaries, then the
# newest /usr/lib/postgresql/<major>/bin (Debian and Ubuntu's layout). When
# neither has them, the server is installed from the distribution's packages
# (apt-get install postgresql; sudo is used only when not root) and the
# search is repeated. A rerun with the server present returns at once.
#
# The tests only use the binaries: each test binary runs its own server in a
# temp dir (test/services/postgres.go); the distribution's own cluster is
# neither needed nor touched.
set -euo pipefail

has_server() { [ -x "$1/postgres" ] && [ -x "$1/initdb" ]; }

find_bin() {
  if [ -n "${CARBONGATE_PG_BIN:-}" ] && has_server "$CARBONGATE_PG_BIN"; then
    echo "$CARBONGATE_PG_BIN"
    return 0
  fi
  local d
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5,5 -n -r); do
    if has_server "$d"; then
      echo "$d"
      return 0
    fi
  done
  return 1
}

if find_bin; then
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "postgres.sh: no PostgreSQL server found and no apt-get to install one;" >&2
  echo "postgres.sh: install PostgreSQL and set CARBONGATE_PG_BIN to the directory holding postgres and initdb" >&2
  exit 1
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
  sudo=(sudo)
fi

root="${XDG_CACHE_HOME:-$HOME/.cache}/carbongate"
mkdir -p "$root"
exec 9>"$root/postgres-install.lock"
flock 9
if ! find_bin >/dev/null; then
  start=$SECONDS
  echo "postgres.sh: installing PostgreSQL (apt-get install postgresql)" >&2
  apt_install() {
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
      apt-get install -y -q --no-install-recommends postgresql >&2
  }
  if ! apt_install; then
    "${sudo[@]}" apt-get update -q >&2
    apt_install
  fi
  echo "postgres.sh: installed in $((SECONDS - start))s" >&2
fi

if ! find_bin; then
  echo "postgres.sh: postgresql is installed but no postgres/initdb was found under /usr/lib/postgresql/*/bin" >&2
  exit 1
fi
