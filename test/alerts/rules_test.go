//go:build interop

package alerts

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/carbongate/carbongate/test/services"
)

// PromtoolEnv names the promtool binary (test/setup/promtool.sh prints it).
const PromtoolEnv = "CARBONGATE_PROMTOOL"

// ruleFile is the part of a Prometheus rule file the tests read.
type ruleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert       string            `json:"alert"`
			Record      string            `json:"record"`
			Expr        string            `json:"expr"`
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"rules"`
	} `json:"groups"`
}

func alertsPath(t *testing.T) string {
	return filepath.Join(services.RepoRoot(t), "deploy", "helm", "carbongate", "files", "alerts.yaml")
}

func dashboardPath(t *testing.T) string {
	return filepath.Join(services.RepoRoot(t), "deploy", "helm", "carbongate", "files", "dashboard.json")
}

func readRules(t *testing.T) ruleFile {
	t.Helper()
	b, err := os.ReadFile(alertsPath(t))
	if err != nil {
		t.Fatal(err)
	}
	var f ruleFile
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("alerts.yaml: %v", err)
	}
	return f
}

// alertExprs returns every alert's expression by alert name.
func alertExprs(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, g := range readRules(t).Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				t.Errorf("group %s: rule %q is not an alert: the check of metric names reads alerts only", g.Name, r.Record)
				continue
			}
			out[r.Alert] = r.Expr
		}
	}
	if len(out) == 0 {
		t.Fatal("alerts.yaml holds no alert")
	}
	return out
}

func promtool(t *testing.T, args ...string) string {
	t.Helper()
	bin := services.Tool(t, PromtoolEnv, "promtool.sh")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = filepath.Join(services.RepoRoot(t), "test", "alerts")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestPromtoolCheckRules: promtool accepts the rule file, lint included.
func TestPromtoolCheckRules(t *testing.T) {
	t.Parallel()
	out := promtool(t, "check", "rules", "--lint=all", "--lint-fatal", alertsPath(t))
	if want := fmt.Sprintf("SUCCESS: %d rules found", len(alertExprs(t))); !strings.Contains(out, want) {
		t.Fatalf("promtool check rules says\n%s\nwant %q", out, want)
	}
}

// TestPromtoolUnitTests: alerts_test.yaml's unit tests pass, and they fire
// every alert of the rule file at least once.
func TestPromtoolUnitTests(t *testing.T) {
	t.Parallel()
	out := promtool(t, "test", "rules", "alerts_test.yaml")
	if !strings.Contains(out, "SUCCESS") {
		t.Fatalf("promtool test rules says\n%s", out)
	}
	b, err := os.ReadFile("alerts_test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var tests struct {
		RuleFiles []string `json:"rule_files"`
		Tests     []struct {
			AlertRuleTest []struct {
				Alertname string            `json:"alertname"`
				ExpAlerts []json.RawMessage `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	if err := yaml.Unmarshal(b, &tests); err != nil {
		t.Fatal(err)
	}
	if len(tests.RuleFiles) != 1 || filepath.Join(services.RepoRoot(t), "test", "alerts", tests.RuleFiles[0]) != alertsPath(t) {
		t.Fatalf("alerts_test.yaml tests %v, want the chart's files/alerts.yaml", tests.RuleFiles)
	}
	fired, cleared := map[string]bool{}, map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fired[a.Alertname] = true
			} else {
				cleared[a.Alertname] = true
			}
		}
	}
	for name := range alertExprs(t) {
		if !fired[name] || !cleared[name] {
			t.Errorf("alert %s: alerts_test.yaml fires it: %v, expects it silent: %v; want both", name, fired[name], cleared[name])
		}
	}
}

// TestRunbooks: every alert has a severity, a summary, a description and a
// runbook_url pointing at a section of docs/runbooks.md named after it.
func TestRunbooks(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(services.RepoRoot(t), "docs", "runbooks.md"))
	if err != nil {
		t.Fatal(err)
	}
	var anchors []string
	for _, m := range regexp.MustCompile(`(?m)^## (\S+)$`).FindAllStringSubmatch(string(b), -1) {
		anchors = append(anchors, strings.ToLower(m[1]))
	}
	const base = "https://github.com/carbongate/carbongate/blob/main/docs/runbooks.md#"
	for _, g := range readRules(t).Groups {
		for _, r := range g.Rules {
			if !slices.Contains([]string{"warning", "critical"}, r.Labels["severity"]) || r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("alert %s: severity %q, summary %q, description %q", r.Alert, r.Labels["severity"], r.Annotations["summary"], r.Annotations["description"])
			}
			u := r.Annotations["runbook_url"]
			if !strings.HasPrefix(u, base) || u != base+strings.ToLower(r.Alert) || !slices.Contains(anchors, strings.TrimPrefix(u, base)) {
				t.Errorf("alert %s: runbook_url %q is not %s<its name, lower case>, a section of docs/runbooks.md", r.Alert, u, base)
			}
		}
	}
}
