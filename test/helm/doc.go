// Package helm checks the Helm chart in deploy/helm/carbongate without a
// cluster or network: its tests (build tag interop) render the chart with a
// real Helm v3 (test/setup/helm.sh builds the pinned version; make passes it
// as $HELM) for several values combinations, run `helm lint --strict`, and
// decode every rendered document strictly into its Go API type — k8s.io/api,
// KServe's serving/v1alpha1 and v1beta1 types, apiextensions/v1 for the CRD
// and field-for-field local types for the Prometheus Operator's
// ServiceMonitor and PrometheusRule — so that an unknown or misspelled field fails. The API
// types' cheap validators (names, labels, selectors, the CRD validator of the
// API server) run next, then the chart's own contracts: probes, the drain
// timing, secrets only through secretKeyRef (and no URL with user
// information anywhere in the output), resources, selectors that match,
// KServe objects identical to `carbonctl deploy render`'s, and the backfill
// CronJob's Secret-backed environment named as in its Indexed Job. Last,
// carbongate and carbonctl are built from the tree: every rendered gateway
// flag must be one carbongate declares, and the CronJob's arguments must
// pass carbonctl backfill's own flag parsing and plan validation.
//
// This is the offline stand-in for kubeconform, whose JSON schemas are not
// reachable here. The package imports github.com/kserve/kserve directly,
// and checks gateway/kserve's local subset of KServe's types against it
// (what Render writes decodes strictly into KServe's types; constants and
// status fields match). It is therefore a module of its own (go.mod here):
// kserve's API packages pull its storage agent, KEDA and the AWS, GCS and
// Azure SDKs, and need replace directives that carbongate's module must not
// have for `go install ...@version` to work. `make test` and `make vet` run
// it (cd test/helm; go test -tags interop ./...).
package helm
