#!/usr/bin/env bash
# kube.sh up|down — a local Kubernetes cluster with carbongate as its
# admission webhook and controller, for trying the Kubernetes side in one
# command (`make kube-up`, `make kube-down`; the Makefile builds what `up`
# needs and passes it in the environment).
#
#   up    as root: the real cluster the tests run (test/cluster, started
#         by its command kubeup, which stays running in the background
#         and holds the cluster up): etcd, kube-apiserver,
#         kube-controller-manager, kube-scheduler, kube-proxy and CoreDNS
#         (the pods' DNS, behind the kube-dns Service); two real
#         nodes (a kubelet with its own containerd each) in westeurope and
#         swedencentral and a kwok node in polandcentral; the project's
#         images (make images) loaded on the nodes; the Helm chart
#         installed with carbongate as webhook and controller (replay clock
#         at REPLAY_SPEED). Then prints the KUBECONFIG line and an example
#         Job to watch start on its region's node.
#         Not root (or KUBE_MODE=apiserver): the API server only — etcd and
#         kube-apiserver on free loopback ports, the VmTemplate CRD and
#         three Node objects labelled with Azure regions (stand-ins: no
#         kubelet, scheduler or controller-manager runs), carbongate
#         (--admission --controller) on the host over TLS, registered with
#         `carbonctl deploy render --webhook`.
#         When everything is already up it says so and prints the lines
#         again; leftovers of a failed or killed start are stopped and
#         replaced.
#   down  stops the processes `up` started (by the pids it recorded,
#         checked against their command lines) and removes the state
#         directory; for the real cluster it then removes whatever the
#         cluster put on the host (processes, mounts, bridges, iptables
#         chains, cgroups, sysctls: `kubeup down`), also after a killed
#         `up`. A no-op when nothing is up.
#
# API-server mode: everything lives in the state directory $KUBE_DIR: one
# CA (openssl, EC P-256) signing the API server's serving certificate, the
# admin's client certificate (system:masters, used by the kubeconfig), the
# client certificate the API server shows webhooks and carbongate's
# serving certificate; the service-account key; etcd's data; the pid
# files and logs. Real cluster: $KUBE_DIR holds kubeup's pid, log and the
# admin kubeconfig; the cluster's own files are under the fixed directory
# of test/cluster (StateDir).
#
# Environment (up): KUBE_DIR (state, default .cache/kube), KUBE_ASSETS (the
# directory holding kube-apiserver and etcd, as test/setup/kube.sh prints),
# KUBE_BIN (the directory holding carbongate, carbonctl and kubeup),
# KUBE_MODELS (trained models, as `make run` uses), REPLAY_START (the
# replay clock), REPLAY_SPEED (how many times as fast as the wall it runs;
# default 360), KUBE_MODE (cluster, the default as root, or apiserver).
# down needs KUBE_BIN for the real cluster's teardown.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
state="${KUBE_DIR:-$root/.cache/kube}"
mkdir -p "$(dirname "$state")"
state="$(cd "$(dirname "$state")" && pwd)/$(basename "$state")"
example="deploy/local/vmtemplate.yaml"
job_example="deploy/local/job.yaml"
cluster_job_example="deploy/local/cluster-job.yaml"
procs=(carbongate kube-apiserver etcd) # in stopping order

# load_mode sets mode and procs from the state's record of the start
# (apiserver when there is none).
mode=apiserver
load_mode() {
  mode="$(cat "$state/mode" 2>/dev/null || echo apiserver)"
  if [ "$mode" = cluster ]; then
    procs=(kubeup)
  fi
}

log() { echo "kube-up: $*" >&2; }
die() {
  log "$*"
  exit 1
}

# pid_of NAME prints the recorded pid of NAME when that process is alive
# (not a zombie) and was started with this state directory in its
# arguments, so a recycled pid is never taken for it.
pid_of() {
  local f="$state/$1.pid" pid stat args
  [ -f "$f" ] || return 1
  pid="$(cat "$f")"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  stat="$(ps -o stat= -p "$pid" 2>/dev/null)" || return 1
  [[ "$stat" != Z* ]] || return 1
  args="$(ps -o args= -p "$pid" 2>/dev/null)" || return 1
  [[ "$args" == *"$state"* ]] || return 1
  echo "$pid"
}

# running succeeds when a start completed and all its processes still run.
running() {
  local p
  [ -f "$state/up" ] || return 1
  for p in "${procs[@]}"; do
    pid_of "$p" >/dev/null || return 1
  done
}

# stop NAME sends SIGTERM, waits up to 20 s (kubeup, which drains the
# cluster's workloads and tears it down: 300 s), then SIGKILL.
stop() {
  local pid i wait=20
  pid="$(pid_of "$1")" || return 0
  [ "$1" != kubeup ] || wait=300
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < wait * 10; i++)); do
    pid_of "$1" >/dev/null || return 0
    sleep 0.1
  done
  log "$1 (pid $pid) did not stop within $wait s: killing it"
  kill -KILL "$pid" 2>/dev/null || true
}

stop_all() {
  local p
  for p in "${procs[@]}"; do
    stop "$p"
  done
}

down() {
  if [ ! -d "$state" ]; then
    echo "kube-down: nothing is up (no $state)"
    return
  fi
  load_mode
  stop_all
  if [ "$mode" = cluster ]; then
    # Also what a killed kubeup (or a killed kube-up) left on the host.
    [ -x "${KUBE_BIN:-}/kubeup" ] || die "no kubeup in KUBE_BIN (run it through make kube-down)"
    [ "$(id -u)" -eq 0 ] || die "the real cluster's teardown needs root"
    CARBONGATE_NODE_DIR="$(cat "$state/node-dir" 2>/dev/null || true)" "$KUBE_BIN/kubeup" down ||
      die "the cluster's teardown failed; state kept in $state"
  fi
  rm -rf "$state"
  echo "kube-down: stopped; removed $state"
}

print_lines() {
  if [ "$mode" = cluster ]; then
    print_cluster_lines
    return
  fi
  local path_line=""
  if ! PATH="$user_path" kubectl_recent && [ -n "${KUBE_ASSETS:-}" ]; then
    path_line="  # no kubectl of 1.32 or later on this PATH: use the one test/setup/kube.sh built
  export PATH=$(cd "$KUBE_ASSETS" && pwd):\$PATH
"
  fi
  cat <<EOF

A Kubernetes API server with carbongate as its admission webhook and controller is up (state,
logs and certificates in $state; the replay clock runs ${REPLAY_SPEED:-360} times as fast as the
wall). Point kubectl at it and create a VmTemplate:

${path_line}  export KUBECONFIG=$state/kubeconfig
  kubectl apply -f $example
  kubectl get vmtemplates -n jobs
  kubectl get vmtemplate batch-1 -n jobs -o yaml

The stored object carries the decision: spec.schedulingRegion, spec.schedulingTime and the
carbongate.io/provenance annotation; at that time the controller creates its provider object
(status.phase Released). Then a Job that carbongate holds, suspended, until its time:

  kubectl apply -f $job_example
  kubectl get job render -n batch -o yaml
  kubectl get events -n batch --watch

Stop everything with: make kube-down

EOF
}

# port picks a loopback port nothing listens on (and not picked before) into
# $port, below Linux's ephemeral range (32768 up) where ports taken with
# bind(:0) by other programs come from.
picked=" "
port() {
  local i p
  for ((i = 0; i < 100; i++)); do
    p=$((20000 + RANDOM % 12000))
    [[ "$picked" != *" $p "* ]] || continue
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      picked+="$p "
      port=$p
      return
    fi
  done
  die "no free loopback port found"
}

# start NAME ARGS... runs a program in the background in a session of its
# own, output to NAME.log, pid to NAME.pid.
start() {
  local name="$1"
  shift
  setsid "$@" >"$state/$name.log" 2>&1 </dev/null &
  echo $! >"$state/$name.pid"
}

# await NAME WHAT CMD... retries CMD for up to 60 s while NAME runs.
await() {
  local name="$1" what="$2" i
  shift 2
  for ((i = 0; i < 300; i++)); do
    if "$@" >/dev/null 2>&1; then
      return
    fi
    pid_of "$name" >/dev/null || die "$name exited before $what; the end of $state/$name.log:
$(tail -n 20 "$state/$name.log")"
    sleep 0.2
  done
  die "$name: not $what within 60 s; the end of $state/$name.log:
$(tail -n 20 "$state/$name.log")"
}

# issue NAME CN ORG EKU [SAN] writes NAME.key and NAME.crt signed by the CA.
issue() {
  local name="$1" cn="$2" org="$3" eku="$4" san="${5:-}" subj
  subj="/CN=$cn"
  [ -z "$org" ] || subj="$subj/O=$org"
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$name.key" 2>/dev/null
  openssl req -new -key "$name.key" -subj "$subj" -out "$name.csr"
  openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -set_serial "0x$(openssl rand -hex 16)" \
    -days 365 -out "$name.crt" -extfile <(
      printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=%s\n' "$eku"
      [ -z "$san" ] || printf 'subjectAltName=%s\n' "$san"
    ) 2>/dev/null
  rm -f "$name.csr"
}

certificates() {
  (
    cd "$state"
    umask 077
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out ca.key 2>/dev/null
    openssl req -x509 -new -key ca.key -subj "/CN=carbongate kube-up CA" -days 365 -out ca.crt \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
    issue apiserver kube-apiserver "" serverAuth "IP:127.0.0.1,DNS:localhost"
    issue admin kube-up-admin system:masters clientAuth
    issue webhook-client kube-apiserver "" clientAuth
    issue carbongate carbongate "" serverAuth "IP:127.0.0.1"
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out sa.key 2>/dev/null
    openssl pkey -in sa.key -pubout -out sa.pub
  )
}

# The PATH the user runs the printed lines with (up may put the kubectl that
# test/setup/kube.sh built before it).
user_path="$PATH"

# kubectl_recent: is the kubectl on PATH one of 1.32 or later (what the
# server-side dry runs and waits below need)?
kubectl_recent() {
  local minor
  command -v kubectl >/dev/null || return 1
  minor="$(kubectl version --client -o json 2>/dev/null | sed -n 's/^ *"minor": "\([0-9]*\).*/\1/p' | head -1)"
  [ -n "$minor" ] && [ "$minor" -ge 32 ]
}

up() {
  local t0=$SECONDS
  load_mode
  if running; then
    echo "kube-up: already up"
    print_lines
    return
  fi
  if [ -d "$state" ]; then
    log "stopping the leftovers of an earlier start in $state"
    stop_all
    rm -rf "$state"
  fi
  if [ "${KUBE_MODE:-cluster}" = cluster ]; then
    if [ "$(id -u)" -eq 0 ]; then
      cluster_up
      return
    fi
    log "not root: a real cluster needs root (kubelet, containerd, bridges, cgroups); starting the API server only (KUBE_MODE=apiserver), where no pod runs"
  fi
  mode=apiserver
  procs=(carbongate kube-apiserver etcd)
  local v
  for v in KUBE_ASSETS KUBE_BIN KUBE_MODELS REPLAY_START; do
    [ -n "${!v:-}" ] || die "$v is not set (run it through make kube-up)"
  done
  command -v openssl >/dev/null || die "openssl is needed for the certificates"
  if ! kubectl_recent; then
    # The kubectl that test/setup/kube.sh builds beside kube-apiserver.
    [ -x "$KUBE_ASSETS/kubectl" ] || die "no kubectl 1.32 or later on PATH nor in $KUBE_ASSETS"
    PATH="$(cd "$KUBE_ASSETS" && pwd):$PATH"
    log "using the kubectl built by test/setup/kube.sh (none of 1.32 or later on PATH)"
  fi
  local bin assets models
  bin="$(cd "$KUBE_BIN" && pwd)"
  assets="$(cd "$KUBE_ASSETS" && pwd)"
  models="$(cd "$KUBE_MODELS" && pwd)"
  mkdir -p "$state"
  echo apiserver >"$state/mode"
  # From here on a failure stops what was started; the logs stay for a look.

  trap 'rc=$?; if [ $rc -ne 0 ]; then stop_all; log "failed; logs in $state (make kube-down removes them)"; fi' EXIT

  certificates
  port
  local etcd_port=$port
  port
  local peer_port=$port
  port
  local api_port=$port
  port
  local gate_port=$port
  local api="https://127.0.0.1:$api_port" gate="https://127.0.0.1:$gate_port"

  start etcd "$assets/etcd" --name kube-up --data-dir "$state/etcd" --unsafe-no-fsync \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
    --initial-cluster "kube-up=http://127.0.0.1:$peer_port"

  # The API server shows webhooks the client certificate the kubeconfig of
  # its WebhookAdmissionConfiguration names (user "*": every webhook).
  cat >"$state/webhook-kubeconfig.yaml" <<EOF
apiVersion: v1
kind: Config
users:
- name: "*"
  user:
    client-certificate: $state/webhook-client.crt
    client-key: $state/webhook-client.key
EOF
  cat >"$state/admission.yaml" <<EOF
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: MutatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: $state/webhook-kubeconfig.yaml
EOF
  cat >"$state/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: kube-up
  cluster:
    server: $api
    certificate-authority: $state/ca.crt
users:
- name: kube-up-admin
  user:
    client-certificate: $state/admin.crt
    client-key: $state/admin.key
contexts:
- name: kube-up
  context: {cluster: kube-up, user: kube-up-admin}
current-context: kube-up
EOF
  chmod 600 "$state/kubeconfig"
  export KUBECONFIG="$state/kubeconfig"

  await etcd "healthy" curl -fsS "http://127.0.0.1:$etcd_port/health"
  # --endpoint-reconciler-type=none: the default reconciler loops on
  # "127.0.0.1 may not be in the loopback range".
  start kube-apiserver "$assets/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$etcd_port" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api_port" \
    --tls-cert-file "$state/apiserver.crt" --tls-private-key-file "$state/apiserver.key" \
    --client-ca-file "$state/ca.crt" --authorization-mode RBAC \
    --service-account-issuer "$api" --service-account-key-file "$state/sa.pub" \
    --service-account-signing-key-file "$state/sa.key" \
    --service-cluster-ip-range 10.0.0.0/24 --disable-admission-plugins ServiceAccount \
    --endpoint-reconciler-type none --admission-control-config-file "$state/admission.yaml"
  await kube-apiserver "ready" curl -fsS --cacert "$state/ca.crt" --cert "$state/admin.crt" \
    --key "$state/admin.key" "$api/readyz"
  log "kube-apiserver ready after $((SECONDS - t0)) s"

  (cd "$root" && kubectl apply -f deploy/crd/vmtemplate.yaml) >/dev/null
  # No cloud operator runs here: a stand-in for Azure Service Operator's VirtualMachine kind
  # (schema-less), the kind deploy/local/vmtemplate.yaml's provider template renders.
  kubectl apply -f - >/dev/null <<'CRD'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: virtualmachines.compute.azure.com}
spec:
  group: compute.azure.com
  scope: Namespaced
  names: {kind: VirtualMachine, listKind: VirtualMachineList, plural: virtualmachines, singular: virtualmachine}
  versions:
  - name: v1api20220301
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
CRD
  await kube-apiserver "serving the VmTemplate CRD" \
    kubectl wait --for condition=Established --timeout 10s crd/vmtemplates.carbongate.io crd/virtualmachines.compute.azure.com
  # Nodes in three regions (no kubelet: objects only), so that held Jobs are placed as well as
  # timed, as in a multi-region or virtual-node (Liqo) cluster.
  local region
  for region in westeurope swedencentral polandcentral; do
    printf 'apiVersion: v1\nkind: Node\nmetadata:\n  name: kube-up-%s\n  labels: {topology.kubernetes.io/region: %s}\n' \
      "$region" "$region" | kubectl apply -f - >/dev/null
  done
  # The key held workloads' decisions are signed with: kept in the state, so a restarted
  # carbongate verifies the decisions it made before.
  [[ -s "$state/decision.key" ]] || head -c 48 /dev/urandom | base64 >"$state/decision.key"
  # After the CRD: the controller watches VmTemplates from its start.
  start carbongate "$bin/carbongate" --addr "127.0.0.1:$gate_port" --models "$models" \
    --clock replay --replay-start "$REPLAY_START" --replay-speed "${REPLAY_SPEED:-360}" --drain-delay 0s \
    --admission --tls-cert "$state/carbongate.crt" --tls-key "$state/carbongate.key" \
    --admission-client-ca "$state/ca.crt" \
    --controller --kubeconfig "$state/kubeconfig" --controller-namespace default --cluster-provider azure \
    --decision-key-file "$state/decision.key"
  await carbongate "ready" curl -fsS --cacert "$state/ca.crt" "$gate/readyz"
  "$bin/carbonctl" deploy render --webhook --ca-bundle "$state/ca.crt" \
    --url "$gate/v1/admission/mutate" | kubectl apply -f - >/dev/null
  # The API server picks the configuration up from a watch: a server-side
  # dry run shows when the webhook is called.
  await kube-apiserver "calling the webhook" probe
  log "carbongate answers the API server after $((SECONDS - t0)) s"
  trap - EXIT
  touch "$state/up"
  print_lines
}

# cluster_up starts kubeup (test/cluster's set-up) in the background and
# waits until it says the cluster is up; kubeup holds it up until down.
cluster_up() {
  local t0=$SECONDS bin node coredns i
  [ -n "${KUBE_BIN:-}" ] && [ -x "$KUBE_BIN/kubeup" ] || die "no kubeup in KUBE_BIN (run it through make kube-up)"
  bin="$(cd "$KUBE_BIN" && pwd)"
  mode=cluster
  procs=(kubeup)
  mkdir -p "$state"
  echo cluster >"$state/mode"
  trap 'rc=$?; if [ $rc -ne 0 ]; then stop_all; log "failed; the log is $state/kubeup.log (make kube-down removes it and what is left)"; fi' EXIT
  # The nodes' binaries, built and cached by test/setup/node.sh.
  node="${CARBONGATE_NODE_DIR:-$("$root/test/setup/node.sh")}"
  echo "$node" >"$state/node-dir"
  # The cluster's DNS server, built and cached by test/setup/coredns.sh.
  coredns="${CARBONGATE_COREDNS:-$("$root/test/setup/coredns.sh")}"
  log "setting up the real cluster: images, control plane, DNS, nodes, chart (log: $state/kubeup.log)"
  (cd "$root" && KUBEBUILDER_ASSETS="${KUBE_ASSETS:-}" CARBONGATE_NODE_DIR="$node" CARBONGATE_COREDNS="$coredns" \
    start kubeup "$bin/kubeup" up -state "$state" -replay-speed "${REPLAY_SPEED:-360}")
  for ((i = 0; i < 18000; i++)); do # 30 minutes: a cold image build
    [ ! -f "$state/up" ] || break
    pid_of kubeup >/dev/null || die "kubeup exited before the cluster was up; the end of $state/kubeup.log:
$(tail -n 30 "$state/kubeup.log")"
    sleep 0.1
  done
  [ -f "$state/up" ] || die "the cluster was not up within 30 minutes; see $state/kubeup.log"
  trap - EXIT
  log "cluster up after $((SECONDS - t0)) s"
  print_cluster_lines
}

print_cluster_lines() {
  local path_line=""
  if ! PATH="$user_path" kubectl_recent; then
    path_line="  # no kubectl of 1.32 or later on this PATH: use the cluster's
  export PATH=$(cat "$state/kubectl-dir"):\$PATH
"
  fi
  cat <<EOF

A Kubernetes cluster is up: two real nodes (kubelet and containerd) in westeurope and
swedencentral, a kwok node in polandcentral, the project's images loaded on the nodes and the
Helm chart installed in namespace carbongate (carbongate as admission webhook and controller;
the replay clock runs ${REPLAY_SPEED:-360} times as fast as the wall; kubeup's log in $state).
Point kubectl at it and watch a held Job start on its region's node:

${path_line}  export KUBECONFIG=$state/kubeconfig
  kubectl get nodes -L topology.kubernetes.io/region
  kubectl apply -f $cluster_job_example
  kubectl get pods -n batch -o wide -w

The Job is stored suspended with carbongate's decision (kubectl get job render -n batch -o yaml:
annotations carbongate.io/scheduling-region and scheduling-time); at that time the controller
releases it and the scheduler places its pod on the node of that region, where it runs to
Completed.

Stop everything with: make kube-down

EOF
}

# probe succeeds when a VmTemplate created (dry run) comes back scheduled.
probe() {
  kubectl create --dry-run=server -o 'jsonpath={.spec.schedulingRegion}' -f - <<EOF | grep -q .
apiVersion: carbongate.io/v1alpha1
kind: VmTemplate
metadata: {name: kube-up-probe, namespace: default}
spec: {duration: PT1H, maxLatencyMs: 0, originRegion: westeurope}
EOF
}

case "${1:-}" in
up) up ;;
down) down ;;
*)
  echo "usage: $0 up|down" >&2
  exit 2
  ;;
esac
