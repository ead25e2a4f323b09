//go:build interop

package helm

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// TestChartRenders renders every case, decodes each document strictly into
// its API type, runs the types' validators and checks the chart's
// contracts (see checkRendered).
func TestChartRenders(t *testing.T) {
	t.Parallel()
	for _, c := range chartCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			m := render(t, c.release, c.ns, c.values)
			objs := decodeAll(t, m)
			got := map[string]int{}
			for _, d := range m.Docs {
				if d.Kind != "CustomResourceDefinition" {
					got[d.Kind]++
				}
			}
			if !maps.Equal(got, c.kinds) {
				t.Errorf("kinds rendered = %v, want %v", got, c.kinds)
			}
			checkRendered(t, c, objs)
		})
	}
}

// TestChartLint runs `helm lint --strict` on the chart with each case's
// values: warnings fail too.
func TestChartLint(t *testing.T) {
	t.Parallel()
	for _, c := range chartCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			out, err := runHelm(t, "lint", "--strict", chartDir(t), "--namespace", c.ns, "--values", valuesFile(t, c.values))
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if !strings.Contains(out, "0 chart(s) failed") {
				t.Fatalf("helm lint --strict:\n%s", out)
			}
		})
	}
}

// TestChartRejects checks that bad values fail the render (schema or the
// chart's own checks) with a message naming the problem.
func TestChartRejects(t *testing.T) {
	t.Parallel()
	for _, c := range rejectCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			out, err := runHelm(t, templateArgs(t, "carbongate", "carbon", c.values)...)
			if err == nil {
				t.Fatalf("helm template accepted %s; rendered:\n%s", c.values, out)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("helm template failed without naming %q:\n%v", c.want, err)
			}
		})
	}
}

// TestChartCaseKinds guards the case table: every kind the chart can render
// is rendered by some case, so none goes unchecked.
func TestChartCaseKinds(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, c := range chartCases {
		for k := range c.kinds {
			seen[k] = true
		}
	}
	want := []string{"ClusterRole", "ClusterRoleBinding", "ConfigMap", "CronJob", "Deployment", "HorizontalPodAutoscaler", "InferenceService",
		"MutatingWebhookConfiguration", "PodDisruptionBudget", "PrometheusRule", "Role", "RoleBinding", "Secret", "Service", "ServiceAccount",
		"ServiceMonitor", "ServingRuntime"}
	got := slices.Sorted(maps.Keys(seen))
	if !slices.Equal(got, want) {
		t.Fatalf("kinds covered by the cases = %v, want %v", got, want)
	}
}
