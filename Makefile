# carbongate — build, run, test, benchmark.
#   make run         build, train the bundled models if absent, start the gateway on :8080
#   make test        everything the tests need, then every test
#   make test-short  unit tests only
#   make lint        staticcheck (make test runs it too)
#   make fuzz        every fuzz target for its budget of inputs after its checked-in corpus (make test runs it too)
#   make help        this list
#   make bench       the performance and accuracy figures
#   make images      OCI images of the three binaries (Podman; CONTAINER=docker works too)
#   make kube-up     a local cluster (as root: real nodes, the chart installed) with carbongate as webhook and controller
#   make kube-down   stop it and remove everything it put on the host
#   make karmada-up  a local Karmada federation (three member clusters in three regions) to try carbongate against; Ctrl-C stops it

SHELL      := /bin/bash
# A recipe that pipes a benchmark through grep fails when the benchmark fails.
.SHELLFLAGS := -o pipefail -c
GO         ?= go
ADDR       ?= :8080
PORT       := $(lastword $(subst :, ,$(ADDR)))
BIN        := bin
CACHE      := .cache
# Trained models are cached per version of the model and data code.
MODELS_KEY := $(shell cat $$(find models forecast -type f \( -name '*.go' -o -name '*.gz' \) -not -name '*_test.go' | LC_ALL=C sort) go.sum 2>/dev/null | sha256sum | cut -c1-12)
MODELS     := $(CACHE)/models/$(MODELS_KEY)
TRAIN_UNTIL ?= 2021-01-01T00:00:00Z
REPLAY_START ?= 2021-06-01T00:00:00Z
# make kube-up runs the replay clock this many times as fast as the wall (a held Job's hours in seconds).
REPLAY_SPEED ?= 360
# State of make kube-up: certificates, etcd data, kubeconfig, pid files and logs.
KUBE_DIR   ?= $(CACHE)/kube
# make bench runs every step, lists here the ones that missed a stated goal or failed, and then fails.
BENCH_MISSED := $(CACHE)/bench-missed
# The version of binaries, images and chart: the chart's appVersion, in one place.
VERSION    := v$(shell sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$$/\1/p' deploy/helm/carbongate/Chart.yaml)
VERSION_PKG := github.com/carbongate/carbongate/cmd/internal/version
LDFLAGS    := -X $(VERSION_PKG).version=$(VERSION) -X $(VERSION_PKG).commit=$(shell git rev-parse HEAD 2>/dev/null)
# Modules nested in the tree (a go.mod of their own; `go test ./...` does not descend into them):
# test/helm requires github.com/kserve/kserve, which carbongate's module does not (docs/performance.md).
NESTED     := test/helm
comma      := ,
space      := $(subst ,, )

.PHONY: all help build run test test-short vet lint fuzz fmt-check bench clean generate models policy-test helm-lint images kube-up kube-down karmada-up

all: build

# The targets, from the comment at the top of this file.
help:
	@sed -n 's/^#   make /make /p' $(firstword $(MAKEFILE_LIST))

build:
	@mkdir -p $(BIN)
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/ ./cmd/...

# Images named and tagged as the Helm chart expects (ghcr.io/carbongate/<binary>:$(VERSION)),
# built without a Docker daemon by Podman from Debian (test/setup/podman.sh installs and sets it
# up); CONTAINER=docker builds the same Containerfile with Docker.
images:
	CONTAINER=$${CONTAINER:-$$(test/setup/podman.sh)} deploy/container/build.sh

$(MODELS)/.done:
	@mkdir -p $(CACHE)/models
	$(GO) run ./cmd/carbonctl train --data bundled --until $(TRAIN_UNTIL) --out $(MODELS).tmp
	@rm -rf $(MODELS) && mv $(MODELS).tmp $(MODELS) && touch $@

models: $(MODELS)/.done

run: build $(MODELS)/.done
	@echo
	@echo "carbongate is starting on $(ADDR) (replay clock from $(REPLAY_START), models in $(MODELS))."
	@echo "Ask it where and when to run a 3-hour 2-kW job across DE, SE, PL and ES within 48 hours (grams and percent saved):"
	@echo
	@echo "  curl -s localhost:$(PORT)/v1/schedule -H 'Content-Type: application/json' \\"
	@echo "    -d '{\"zones\":[\"DE\",\"SE\",\"PL\",\"ES\"],\"duration\":\"PT3H\",\"deadline\":\"2021-06-03T00:00:00Z\",\"power_watts\":2000}'"
	@echo
	@echo "Other endpoints: /v1/zones  /v1/forecast?zone=DE  /openapi.json  /metrics  /healthz"
	@echo "MLflow registry API (embedded store $(CACHE)/registry.db): /api/2.0/mlflow/...; promoting a version"
	@echo "(alias champion) switches what serves, live: see docs/registry.md."
	@echo
	exec $(BIN)/carbongate --addr $(ADDR) --models $(MODELS) --clock replay --replay-start $(REPLAY_START) --drain-delay 0s \
		--registry $(CACHE)/registry.db --registry-cache-dir $(CACHE)/registry-models \
		--artifact-sources $(CURDIR)/$(CACHE)/models,$(CURDIR)/$(CACHE)/artifacts

# As root: the real cluster of test/cluster (two real nodes in westeurope and swedencentral, a
# kwok node, the images loaded, the chart installed), held up by test/cluster/kubeup. Not root
# (or KUBE_MODE=apiserver): etcd and kube-apiserver on loopback (built once by
# test/setup/kube.sh, as make test does), the VmTemplate CRD, carbongate --admission over TLS on
# the models make run serves. Prints the KUBECONFIG line and an example (deploy/local/kube.sh).
# Rerun: says it is up.
kube-up: build $(MODELS)/.done
	@$(GO) build -o $(BIN)/ ./test/cluster/kubeup
	@ASSETS=$$(test/setup/kube.sh) && \
	KUBE_DIR=$(KUBE_DIR) KUBE_ASSETS=$$ASSETS KUBE_BIN=$(BIN) KUBE_MODELS=$(MODELS) REPLAY_START=$(REPLAY_START) REPLAY_SPEED=$(REPLAY_SPEED) \
		deploy/local/kube.sh up

# Stops what kube-up started (by pid), tears down what the real cluster put on the host (also
# after a killed kube-up) and removes $(KUBE_DIR); a no-op when it is not up.
kube-down:
	@KUBE_DIR=$(KUBE_DIR) KUBE_BIN=$(BIN) deploy/local/kube.sh down

# A Karmada control plane (v1.18.2) and three member clusters in three regions (azure
# swedencentral, azure polandcentral, gcp europe-west3: grid zones SE, PL, DE), as the federation
# tests run them (test/federation; binaries built once by test/setup/kube.sh, node.sh and
# karmada.sh, as make test does), held up in the foreground by test/federation/karmadaup: it
# prints the kubeconfigs, the carbongate command line (--admission --karmada-kubeconfig
# --controller) and how to register its webhook; Ctrl-C stops every process and removes its files.
# No root needed.
karmada-up: build $(MODELS)/.done
	@$(GO) build -o $(BIN)/ ./test/federation/karmadaup
	@KUBEBUILDER_ASSETS=$$(test/setup/kube.sh) && CARBONGATE_NODE_DIR=$$(test/setup/node.sh) && \
	CARBONGATE_KARMADA_DIR=$$(test/setup/karmada.sh) && export KUBEBUILDER_ASSETS CARBONGATE_NODE_DIR CARBONGATE_KARMADA_DIR && \
	exec $(BIN)/karmadaup -bin $(BIN) -models $(MODELS) -replay-start $(REPLAY_START) -replay-speed $(REPLAY_SPEED)

vet:
	$(GO) vet ./...
	$(GO) vet -tags interop ./...
	for m in $(NESTED); do (cd $$m && $(GO) vet ./... && $(GO) vet -tags interop ./...) || exit 1; done

# staticcheck (pinned, built once by test/setup/staticcheck.sh) over every package, the interop
# tests included.
lint:
	SC=$$(test/setup/staticcheck.sh) && $$SC -tags interop ./... && \
	for m in $(NESTED); do (cd $$m && $$SC -tags interop ./...) || exit 1; done

# Every fuzz target (found in the tree, none listed by hand) for the count of inputs its comment states; a target
# without a checked-in corpus fails.
fuzz:
	GO=$(GO) test/fuzz.sh

# Regenerates the OIP gRPC stubs from the proto shipped in kserve's Go module, the OPA bundle's
# data and the instance-type data from the pinned Cloud Carbon Footprint npm tarballs.
# The instance catalog and the region table (forecast/regions/gen, also from pinned PyPI wheels)
# first: deploy/opa/gen derives the OPA bundle's instance index and region data from them.
generate:
	./oip/grpc/generate.sh
	$(GO) run ./forecast/instances/gen -tarballs "$$(test/setup/ccf.sh)"
	$(GO) run ./forecast/regions/gen -tarballs "$$(test/setup/ccf.sh)" -wheels "$$(test/setup/regiondata.sh)"
	$(GO) run ./deploy/opa/gen

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

# PostgreSQL comes from Debian's packages (installed when absent; each test
# binary runs its own server in a temp dir). The Python peers (KServe,
# MLServer, MLflow) and SeaweedFS live in virtualenvs outside the clone,
# keyed by the hash of their pinned requirements. kube-apiserver and etcd
# are built once from test/setup/kube/ (several minutes; cached the same way),
# the OpenTelemetry Collector the tracing test exports to from
# test/setup/otelcol/, Karmada's API server, controllers and webhook (the
# federation tests) from test/setup/karmada/, KServe's controller from
# test/setup/kserve/, the real cluster's CoreDNS from test/setup/coredns/.
# CrateDB is unpacked once from ../shared/peers/cratedb/ beside the clone
# (test/setup/cratedb.sh); each test binary runs its own server as well.
# test/gotest runs every package `go list -tags interop ./...` names, in this
# module and in $(NESTED), and fails when any of them fails, does not build or
# reports no result; it ends with "tests: N passed, N failed" (raw events in
# $(CACHE)/test-events.json). The abuse suite runs after the rest, alone: its
# latency bounds compare an attacked gateway with the same gateway unloaded,
# which other test binaries running beside it on 2 cores would skew.
test: fmt-check vet lint fuzz
	@echo "setting up the peers (cached after the first run)"
	CARBONGATE_PG_BIN=$$(test/setup/postgres.sh) && \
	CARBONGATE_CRATEDB_HOME=$$(test/setup/cratedb.sh) && \
	CARBONGATE_OPA=$$(test/setup/opa.sh) && \
	HELM=$$(test/setup/helm.sh) && \
	CARBONGATE_PROMTOOL=$$(test/setup/promtool.sh) && \
	CARBONGATE_CCF=$$(test/setup/ccf.sh) && \
	CARBONGATE_REGIONDATA=$$(test/setup/regiondata.sh) && \
	CARBONGATE_PODMAN=$$(test/setup/podman.sh) && \
	KUBEBUILDER_ASSETS=$$(test/setup/kube.sh) && \
	CARBONGATE_NODE_DIR=$$(test/setup/node.sh) && \
	CARBONGATE_COREDNS=$$(test/setup/coredns.sh) && \
	CARBONGATE_KARMADA_DIR=$$(test/setup/karmada.sh) && \
	CARBONGATE_KSERVE_DIR=$$(test/setup/kserve.sh) && \
	CARBONGATE_OTELCOL=$$(test/setup/otelcol.sh) && \
	CARBONGATE_VENV_KSERVE=$$(test/setup/venv.sh test/python/requirements-kserve.txt) && \
	CARBONGATE_VENV_MLSERVER=$$(test/setup/venv.sh test/python/requirements-mlserver.txt) && \
	CARBONGATE_VENV_MLFLOW=$$(test/setup/venv.sh test/python/requirements-mlflow.txt) && \
	CARBONGATE_VENV_MLFLOW_CRATEDB=$$(test/setup/venv.sh test/python/requirements-mlflow-cratedb.txt) && \
	CARBONGATE_VENV_SCHEMATHESIS=$$(test/setup/venv.sh test/python/requirements-schemathesis.txt) && \
	CARBONGATE_VENV_NOTEBOOKS=$$(test/setup/venv.sh test/python/requirements-notebooks.txt) && \
	export CARBONGATE_PG_BIN CARBONGATE_CRATEDB_HOME CARBONGATE_OPA HELM CARBONGATE_PROMTOOL CARBONGATE_CCF CARBONGATE_REGIONDATA CARBONGATE_PODMAN KUBEBUILDER_ASSETS CARBONGATE_NODE_DIR CARBONGATE_COREDNS CARBONGATE_KARMADA_DIR CARBONGATE_KSERVE_DIR CARBONGATE_OTELCOL CARBONGATE_VENV_KSERVE CARBONGATE_VENV_MLSERVER CARBONGATE_VENV_MLFLOW CARBONGATE_VENV_MLFLOW_CRATEDB CARBONGATE_VENV_SCHEMATHESIS CARBONGATE_VENV_NOTEBOOKS && \
	mkdir -p $(CACHE) && \
	$(GO) run ./test/gotest -go $(GO) -tags interop -timeout 25m -nested $(subst $(space),$(comma),$(NESTED)) \
		-alone github.com/carbongate/carbongate/test/abuse -json-out $(CACHE)/test-events.json

test-short: fmt-check vet
	$(GO) test -count=1 -short ./...
	for m in $(NESTED); do (cd $$m && $(GO) test -count=1 -short ./...) || exit 1; done

# The OPA policy's own tests (make test runs them too, in test/opa).
policy-test:
	$$(test/setup/opa.sh) test deploy/opa -v

# Lint and render the Helm chart and check every rendered object (make test runs this too).
helm-lint:
	HELM=$$(test/setup/helm.sh) && $$HELM lint --strict deploy/helm/carbongate && \
	cd test/helm && HELM=$$HELM $(GO) test -count=1 -tags interop ./...

bench:
	@mkdir -p $(CACHE) && rm -f $(BENCH_MISSED)
	( $(GO) test -run '^$$' -bench . -benchtime 2s -cpu 1 ./forecast/ ) || echo 'forecast: window search' >> $(BENCH_MISSED)
	( $(GO) test -run '^$$' -bench . -skip '^BenchmarkOverload$$' ./gateway/... ) || echo 'gateway benchmarks' >> $(BENCH_MISSED)
	( $(GO) test -run '^$$' -bench '^BenchmarkOverload$$' ./gateway/httpapi/ | grep -e '^overload' -e 'goal missed' ) || echo 'gateway overload' >> $(BENCH_MISSED)
	( $(GO) test -run '^$$' -bench Throughput ./cmd/carbonserve/ ) || echo 'carbonserve throughput' >> $(BENCH_MISSED)
	( $(GO) test -run '^$$' -bench '^BenchmarkModelInfer$$' -benchtime 3s ./oip/grpc | grep -v -e '^PASS$$' -e '^ok ' ) || echo 'OIP gRPC' >> $(BENCH_MISSED)
	@echo "registry: alias lookups against a real MLflow server on the same PostgreSQL, and promotion delay under load"
	( CARBONGATE_PG_BIN=$$(test/setup/postgres.sh) && \
	CARBONGATE_VENV_KSERVE=$$(test/setup/venv.sh test/python/requirements-kserve.txt) && \
	CARBONGATE_VENV_MLFLOW=$$(test/setup/venv.sh test/python/requirements-mlflow.txt) && \
	export CARBONGATE_PG_BIN CARBONGATE_VENV_KSERVE CARBONGATE_VENV_MLFLOW && \
	$(GO) test -tags interop -run '^$$' -bench '^BenchmarkAliasLookup$$' -benchtime 1x ./test/e2e/ | grep -v -e '^PASS$$' -e '^ok ' -e '^goos' -e '^goarch' -e '^pkg' -e '^cpu' -e '^Benchmark' && \
	$(GO) test -tags interop -count=1 -run '^TestPromotionUnderLoad$$' -v ./test/e2e/ | grep -e 'promotion visible' -e 'goal missed' ) || echo 'registry: alias lookups and promotion delay' >> $(BENCH_MISSED)
	@echo "admission: OPA CPU per review at 1,000 reviews/s for 60 s, then 2,000 reviews/s for 60 s through OPA (http.send) and straight to carbongate"
	( CARBONGATE_OPA=$$(test/setup/opa.sh) && export CARBONGATE_OPA && \
	$(GO) test -tags interop -run '^$$' -bench '^BenchmarkAdmissionLoad$$' -benchtime 1x -timeout 10m ./test/opa/ | grep -e '^admission load' -e 'goal missed' ) || echo 'admission through OPA' >> $(BENCH_MISSED)
	@echo "admission through a real API server: 500 VmTemplate creates each with no webhook, carbongate's webhook and OPA's (goal: carbongate <= +5 ms p99)"
	( KUBEBUILDER_ASSETS=$$(test/setup/kube.sh) && CARBONGATE_OPA=$$(test/setup/opa.sh) && export KUBEBUILDER_ASSETS CARBONGATE_OPA && \
	$(GO) test -tags interop -run '^$$' -bench '^BenchmarkAdmissionThroughAPIServer$$' -benchtime 1x -timeout 15m ./test/kube/ | grep -e '^apiserver admission' -e 'goal missed' ) || echo 'admission through the API server' >> $(BENCH_MISSED)
	@echo "admission through the webhook's Service on the real cluster (root): carbongate as the chart's 2 pods on a real-time clock, 2,000 Job creates each with and without the webhook (goal: <= +5 ms p99)"
	( KUBEBUILDER_ASSETS=$$(test/setup/kube.sh) && CARBONGATE_NODE_DIR=$$(test/setup/node.sh) && CARBONGATE_COREDNS=$$(test/setup/coredns.sh) && \
	CARBONGATE_PODMAN=$$(test/setup/podman.sh) && HELM=$$(test/setup/helm.sh) && export KUBEBUILDER_ASSETS CARBONGATE_NODE_DIR CARBONGATE_COREDNS CARBONGATE_PODMAN HELM && \
	$(GO) test -tags interop -run '^$$' -bench '^BenchmarkAdmissionThroughService$$' -benchtime 1x -timeout 15m ./test/cluster/ | grep -e '^cluster admission' -e 'goal missed' ) || echo 'admission through the Service on the real cluster' >> $(BENCH_MISSED)
	@echo "controller: 10,000 Jobs held on a real API server, released over a minute (goal: release lag p99 < 1 s; RSS per 1,000 held; CPU while holding)"
	( KUBEBUILDER_ASSETS=$$(test/setup/kube.sh) && export KUBEBUILDER_ASSETS && \
	$(GO) test -tags interop -run '^$$' -bench '^BenchmarkHeldWorkloads$$' -benchtime 1x -timeout 15m ./test/kube/ | grep -e '^held workloads' -e 'goal missed' ) || echo 'controller: held workloads' >> $(BENCH_MISSED)
	@echo "federation: 200 Jobs held through Karmada and released at the same second, then the same wave dispatched by Karmada alone (no carbongate), same run (goal: release lag p99 < 2 s)"
	( KUBEBUILDER_ASSETS=$$(test/setup/kube.sh) && CARBONGATE_NODE_DIR=$$(test/setup/node.sh) && CARBONGATE_KARMADA_DIR=$$(test/setup/karmada.sh) && \
	export KUBEBUILDER_ASSETS CARBONGATE_NODE_DIR CARBONGATE_KARMADA_DIR && \
	out=$$($(GO) test -tags interop -count=1 -run '^TestFederation$$/^(HoldingWave|DispatchWave)$$' -v -timeout 15m ./test/federation/ 2>&1); \
	echo "$$out" | grep -e 'figures: release' -e 'figures: Karmada alone' -e 'goal missed' -e FAIL; \
	echo "$$out" | grep -q '^ok ' && ! echo "$$out" | grep -q 'goal missed' ) || echo 'federation: release wave' >> $(BENCH_MISSED)
	( $(GO) run ./cmd/carbonctl train --data bundled --until $(TRAIN_UNTIL) --signal direct --out $(CACHE)/bench-models ) || echo 'models: training' >> $(BENCH_MISSED)
	( $(GO) run ./cmd/carbonctl evaluate --data bundled --models $(CACHE)/bench-models --from 2021-01-01 --to 2021-06-27 --signal direct --output table ) || echo 'models: accuracy' >> $(BENCH_MISSED)
	@echo "backfill: 12 zones x 366 daily 96 h forecasts into PostgreSQL and CrateDB vs each one's own COPY of the same rows (goal >= 0.7x)"
	( CARBONGATE_PG_BIN=$$(test/setup/postgres.sh) && CARBONGATE_CRATEDB_HOME=$$(test/setup/cratedb.sh) && export CARBONGATE_PG_BIN CARBONGATE_CRATEDB_HOME && \
	$(GO) test -tags interop -run '^$$' -bench '^BenchmarkBackfillVsCopy$$' -benchtime 1x -timeout 15m ./test/backfill/ | grep -e '^backfill into' -e 'goal missed' -e FAIL ) || echo 'backfill into PostgreSQL and CrateDB' >> $(BENCH_MISSED)
	@if [ -s $(BENCH_MISSED) ]; then echo "make bench: a stated goal was missed or a benchmark failed in:"; sed 's/^/  /' $(BENCH_MISSED); exit 1; fi
	@echo "make bench: every stated goal met"

clean: kube-down
	rm -rf $(BIN) $(CACHE)
