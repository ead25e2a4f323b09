# lib.sh — sourced by the setup scripts that build a pinned tool once into
# the cache (opa.sh, helm.sh, staticcheck.sh, promtool.sh, otelcol.sh,
# kube.sh). Each defines `built` (is the right version at its target?) and
# `build TMP` (leave the output in TMP under its target's base name), then
# calls build_once.

cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/carbongate"

# build_once NAME TARGET prints TARGET once built: at once when `built`
# says so, else after running `build` under a lock that keeps concurrent
# callers from building it twice. Build logs go to stderr.
build_once() {
  local name="$1" target="$2" start tmp
  if built; then
    echo "$target"
    return 0
  fi
  mkdir -p "$cache_root" "$(dirname "$target")"
  exec 9>"$cache_root/$name.lock"
  flock 9
  if ! built; then
    start=$SECONDS
    tmp="$(mktemp -d "$cache_root/$name-build.XXXXXX")"
    # shellcheck disable=SC2064 # expand now: tmp is local
    trap "rm -rf '$tmp'" EXIT
    build "$tmp" >&2
    rm -rf "$target"
    mv -f "$tmp/$(basename "$target")" "$target"
    built || { echo "${0##*/}: $target is not the version asked for" >&2; exit 1; }
    echo "${0##*/}: built $target in $((SECONDS - start))s" >&2
  fi
  echo "$target"
}

# go_install DIR LDFLAGS MODULE@VERSION installs a command into DIR from the
# Go module proxy, outside any module and workspace (the caller's go.mod is
# neither read nor touched).
go_install() {
  (cd "$1" && GOWORK=off CGO_ENABLED=0 GOBIN="$1" go install -trimpath -ldflags "$2" "$3")
}

# tools_module_version DIR MODULE prints the version of MODULE that the
# tools module in DIR requires (in a require block or on a require line of
# its own), failing the script when it requires none.
tools_module_version() {
  local v
  v="$(awk -v m="$2" '$1 == "require" { $0 = substr($0, index($0, $2)) } $1 == m && $2 ~ /^v/ { print $2; exit }' "$1/go.mod")"
  [ -n "$v" ] || { echo "${0##*/}: no $2 in $1/go.mod" >&2; exit 1; }
  echo "$v"
}

# tools_build DIR LDFLAGS OUT PKG builds PKG of the tools module in DIR into
# OUT with GOWORK=off and -mod=readonly: the tools module's own go.mod and
# go.sum, never edited.
tools_build() {
  (cd "$1" && GOWORK=off GOFLAGS=-mod=readonly CGO_ENABLED=0 go build -trimpath -ldflags "$2" -o "$3" "$4")
}

# tools_module_key DIR is a short hash of a tools module's go.mod, go.sum
# and sources: its build is cached under it.
tools_module_key() {
  (cd "$1" && find . -type f \( -name go.mod -o -name go.sum -o -name '*.go' \) | LC_ALL=C sort |
    xargs sha256sum | sha256sum | cut -c1-12)
}
