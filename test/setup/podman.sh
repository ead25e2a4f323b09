#!/usr/bin/env bash
# podman.sh — make sure Podman can build and run images here, and print the
# path of a podman command set up for it on stdout (logs go to stderr).
#
# Podman and runc come from Debian's packages (installed when absent). The
# printed command runs podman with its own containers.conf under
#   ${XDG_CACHE_HOME:-$HOME/.cache}/carbongate/podman/
# (CONTAINERS_CONF), which selects runc and the cgroupfs manager and turns
# off the default ulimits: crun's cgroup handling and the default ulimits
# fail in sandboxed machines. The system's own configuration is untouched.
# Idempotent; a lock keeps concurrent callers from installing twice.
set -euo pipefail

root="${XDG_CACHE_HOME:-$HOME/.cache}/carbongate"
dir="$root/podman"
wrapper="$dir/podman"
mkdir -p "$dir"
exec 9>"$root/podman-install.lock"
flock 9

if ! command -v podman >/dev/null || ! command -v runc >/dev/null; then
  echo "podman.sh: installing podman and runc from Debian's packages" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq podman runc >&2
fi

conf="$dir/containers.conf"
cat > "$conf.tmp" <<'CONF'
[containers]
default_ulimits = []

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
CONF
mv -f "$conf.tmp" "$conf"
cat > "$wrapper.tmp" <<WRAP
#!/bin/sh
CONTAINERS_CONF="$conf" exec podman "\$@"
WRAP
chmod +x "$wrapper.tmp"
mv -f "$wrapper.tmp" "$wrapper"
"$wrapper" version --format '{{.Client.Version}}' | sed 's/^/podman.sh: podman /' >&2
echo "$wrapper"
