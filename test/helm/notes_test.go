//go:build interop

package helm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// notesTemplate renders NOTES.txt inside a ConfigMap: `helm template` skips
// NOTES.txt and `helm install --dry-run` wants a cluster, so the test
// renders the same text with tpl, in the same template set.
const notesTemplate = `apiVersion: v1
kind: ConfigMap
metadata:
  name: notes
data:
  notes: {{ tpl (.Files.Get "notes/NOTES.txt") . | quote }}
`

// notesChart copies the chart's templates and values into a temp dir, with
// NOTES.txt as a file and the template above; files/ and crds/ are left
// out (the notes use neither).
func notesChart(t *testing.T) string {
	t.Helper()
	src, dst := chartDir(t), t.TempDir()
	copyFile := func(from, to string) {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"Chart.yaml", "values.yaml", "values.schema.json"} {
		copyFile(filepath.Join(src, f), filepath.Join(dst, f))
	}
	entries, err := os.ReadDir(filepath.Join(src, "templates"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		to := filepath.Join(dst, "templates", e.Name())
		if e.Name() == "NOTES.txt" {
			to = filepath.Join(dst, "notes", "NOTES.txt")
		}
		copyFile(filepath.Join(src, "templates", e.Name()), to)
	}
	if err := os.WriteFile(filepath.Join(dst, "templates", "zz-notes.yaml"), []byte(notesTemplate), 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestChartNotes renders NOTES.txt for every case: no missing value, and
// each enabled part says what it needs.
func TestChartNotes(t *testing.T) {
	t.Parallel()
	chart := notesChart(t)
	for _, c := range chartCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			out, err := runHelm(t, "template", c.release, chart, "--namespace", c.ns, "--show-only", "templates/zz-notes.yaml",
				"--values", valuesFile(t, c.values))
			if err != nil {
				t.Fatal(err)
			}
			var cm corev1.ConfigMap
			if err := yaml.Unmarshal([]byte(out), &cm); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			notes := cm.Data["notes"]
			if strings.Contains(notes, "<no value>") {
				t.Fatalf("NOTES.txt:\n%s", notes)
			}
			checkKarmadaNotes(t, c, notes)
			if c.apiServer {
				return
			}
			if !strings.Contains(notes, "port-forward") {
				t.Fatalf("NOTES.txt:\n%s", notes)
			}
			var values struct {
				Store struct {
					Enabled bool `json:"enabled"`
				} `json:"store"`
			}
			if err := yaml.Unmarshal([]byte(c.values), &values); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(notes, "Production mode:"); got != values.Store.Enabled {
				t.Errorf("NOTES.txt mentions production mode: %v, want %v (store.enabled)\n%s", got, values.Store.Enabled, notes)
			}
			for kind, line := range map[string]string{
				"MutatingWebhookConfiguration": "Admission (",
				"CronJob":                      "Backfill CronJob",
				"InferenceService":             "carbonserve models",
				"Role":                         "KServe discovery",
			} {
				if got, want := strings.Contains(notes, line), c.kinds[kind] > 0; got != want {
					t.Errorf("NOTES.txt mentions %q: %v, want %v\n%s", line, got, want, notes)
				}
			}
		})
	}
}
