// Package alerts checks the monitoring the Helm chart ships against the
// real tools and binaries (build tag interop): the alerting rules of
// deploy/helm/carbongate/files/alerts.yaml with promtool (test/setup/promtool.sh
// builds the pinned version; make passes it as $CARBONGATE_PROMTOOL) —
// `promtool check rules`, and `promtool test rules` on alerts_test.yaml, which
// fires and clears every alert — a runbook section in docs/runbooks.md and a
// unit test for every alert; and that every metric named by an alert
// expression or a query of the Grafana dashboard (files/dashboard.json) is
// one that a running carbongate or carbonserve exports on /metrics.
package alerts
