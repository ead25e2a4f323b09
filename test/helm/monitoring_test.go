//go:build interop

package helm

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// defaultRunbookBase is prometheusRule.runbookBase's default: the prefix of
// every runbook_url in files/alerts.yaml.
const defaultRunbookBase = "https://github.com/carbongate/carbongate/blob/main/docs/runbooks.md"

// caseValue returns the string at path (dot-separated) in c's values, or
// def when absent.
func caseValue(t *testing.T, c chartCase, path, def string) string {
	t.Helper()
	var v any
	if err := yaml.Unmarshal([]byte(c.values), &v); err != nil {
		t.Fatal(err)
	}
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return def
		}
		if v, ok = m[k]; !ok {
			return def
		}
	}
	if s, ok := v.(string); ok {
		return s
	}
	return def
}

// chartFile reads a file of the chart's files/ directory.
func chartFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(chartDir(t), "files", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkPrometheusRules: the spec is files/alerts.yaml (what promtool tests
// in test/alerts) with the runbook base of the values; every alert has an
// expression, a severity, a summary and a runbook_url under that base
// whose anchor is the alert's name.
func checkPrometheusRules(t *testing.T, c chartCase, o *Objects) {
	t.Helper()
	if len(o.PrometheusRules) == 0 {
		return
	}
	base := caseValue(t, c, "prometheusRule.runbookBase", defaultRunbookBase)
	var want PrometheusRuleSpec
	file := strings.ReplaceAll(string(chartFile(t, "alerts.yaml")), defaultRunbookBase, base)
	if err := yaml.UnmarshalStrict([]byte(file), &want); err != nil {
		t.Fatalf("files/alerts.yaml: %v", err)
	}
	for _, pr := range o.PrometheusRules {
		id := "PrometheusRule " + pr.Name
		if !reflect.DeepEqual(pr.Spec, want) {
			t.Errorf("%s: spec is not files/alerts.yaml with runbook base %s", id, base)
		}
		alerts := 0
		for _, g := range pr.Spec.Groups {
			for _, r := range g.Rules {
				if r.Alert == "" {
					continue
				}
				alerts++
				if strings.TrimSpace(r.Expr) == "" || r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
					t.Errorf("%s: alert %s lacks an expr, a severity label or a summary", id, r.Alert)
				}
				if got, want := r.Annotations["runbook_url"], base+"#"+strings.ToLower(r.Alert); got != want {
					t.Errorf("%s: alert %s: runbook_url %q, want %q", id, r.Alert, got, want)
				}
			}
		}
		if alerts == 0 {
			t.Errorf("%s: no alerts", id)
		}
	}
}

// checkDashboards: the dashboard ConfigMap carries the sidecar's label and
// files/dashboard.json unchanged.
func checkDashboards(t *testing.T, c chartCase, o *Objects) {
	t.Helper()
	label := caseValue(t, c, "grafana.dashboard.label", "grafana_dashboard")
	var want any
	if err := json.Unmarshal(chartFile(t, "dashboard.json"), &want); err != nil {
		t.Fatalf("files/dashboard.json: %v", err)
	}
	for _, cm := range o.ConfigMaps {
		if _, ok := cm.Labels[label]; !ok {
			continue
		}
		var got any
		if err := json.Unmarshal([]byte(cm.Data["carbongate.json"]), &got); err != nil {
			t.Errorf("ConfigMap %s: carbongate.json: %v", cm.Name, err)
		} else if !reflect.DeepEqual(got, want) {
			t.Errorf("ConfigMap %s: carbongate.json is not files/dashboard.json", cm.Name)
		}
		if got, want := cm.Annotations["grafana_folder"], caseValue(t, c, "grafana.dashboard.folder", ""); got != want {
			t.Errorf("ConfigMap %s: grafana_folder %q, want %q", cm.Name, got, want)
		}
	}
}
