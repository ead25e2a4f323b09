//go:build interop

package helm

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/carbongate/carbongate/test/services"
)

// HelmEnv names the Helm binary to use; make sets it to the output of
// test/setup/helm.sh. Unset, TestMain runs that script itself.
const HelmEnv = "HELM"

// helmTimeout bounds one helm command; setupTimeout the first build of
// Helm by test/setup/helm.sh.
const (
	helmTimeout  = 2 * time.Minute
	setupTimeout = 15 * time.Minute
)

// TestMain makes sure $HELM names a Helm binary before the tests run: when
// it is unset, test/setup/helm.sh builds the pinned Helm once (later runs
// return at once) and $HELM is set to what it prints. A failure there fails
// the package.
func TestMain(m *testing.M) {
	if os.Getenv(HelmEnv) == "" {
		path, err := setupHelm()
		if err != nil {
			fmt.Fprintln(os.Stderr, "test/helm:", err)
			os.Exit(1)
		}
		os.Setenv(HelmEnv, path)
	}
	os.Exit(m.Run())
}

// setupHelm runs test/setup/helm.sh from the repository root and returns
// the path it prints.
func setupHelm() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for !fileExists(filepath.Join(dir, "test", "setup", "helm.sh")) {
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no test/setup/helm.sh above the working directory")
		}
		dir = parent
	}
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(dir, "test", "setup", "helm.sh"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("test/setup/helm.sh: %v\n%s", err, stderr.String())
	}
	return strings.TrimSpace(stdout.String()), nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// helmBin returns $HELM, failing the test unless it is an executable.
func helmBin(tb testing.TB) string {
	tb.Helper()
	p := os.Getenv(HelmEnv)
	if fi, err := os.Stat(p); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		tb.Fatalf("%s=%q is not an executable (err %v): run test/setup/helm.sh and export %s", HelmEnv, p, err, HelmEnv)
	}
	return p
}

// chartDir is the chart under test.
func chartDir(tb testing.TB) string {
	tb.Helper()
	return filepath.Join(services.RepoRoot(tb), "deploy", "helm", "carbongate")
}

// runHelm runs helm with args and returns its stdout, and its stderr in the
// error when it fails.
func runHelm(tb testing.TB, args ...string) (string, error) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), helmTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, helmBin(tb), args...)
	// Keep Helm away from the user's repositories, plugins and caches.
	home, err := os.MkdirTemp("", "carbongate-helm-home-")
	if err != nil {
		tb.Fatal(err)
	}
	defer os.RemoveAll(home)
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+home, "HELM_CACHE_HOME="+home, "HELM_DATA_HOME="+home)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err = cmd.Run(); err != nil {
		return stdout.String(), errors.New("helm " + strings.Join(args, " ") + ": " + err.Error() + "\n" + stderr.String())
	}
	return stdout.String(), nil
}

// valuesFile writes values (YAML) to a temp file and returns its path.
func valuesFile(tb testing.TB, values string) string {
	tb.Helper()
	var probe map[string]any
	if err := yaml.UnmarshalStrict([]byte(values), &probe); err != nil {
		tb.Fatalf("the test's values do not parse: %v\n%s", err, values)
	}
	// Not under tb.TempDir(): its name holds the test's name, and Helm
	// splits --values on commas.
	f, err := os.CreateTemp("", "carbongate-values-*.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.Remove(f.Name()) })
	if _, err := f.WriteString(values); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	return f.Name()
}

// templateArgs are the arguments of `helm template` for a release in ns
// with values; the CRDs are included.
func templateArgs(tb testing.TB, release, ns, values string) []string {
	tb.Helper()
	return []string{"template", release, chartDir(tb), "--namespace", ns, "--include-crds", "--values", valuesFile(tb, values)}
}

// Doc is one rendered document.
type Doc struct {
	Source     string // the template it came from (Helm's "# Source:" line)
	APIVersion string
	Kind       string
	Name       string
	Namespace  string
	JSON       []byte // the document as JSON, converted strictly (duplicate keys fail)
}

// ID names d in messages.
func (d Doc) ID() string { return d.APIVersion + "/" + d.Kind + " " + d.Name }

// Manifest is the output of one render.
type Manifest struct {
	Docs []Doc
}

// Of returns the documents of kind.
func (m Manifest) Of(kind string) []Doc {
	var out []Doc
	for _, d := range m.Docs {
		if d.Kind == kind {
			out = append(out, d)
		}
	}
	return out
}

// render runs helm template and splits the output into documents. It fails
// the test on a render error.
func render(tb testing.TB, release, ns, values string) Manifest {
	tb.Helper()
	out, err := runHelm(tb, templateArgs(tb, release, ns, values)...)
	if err != nil {
		tb.Fatalf("render: %v", err)
	}
	m, err := splitDocs(out)
	if err != nil {
		tb.Fatalf("render: %v\n%s", err, out)
	}
	return m
}

// splitDocs splits multi-document YAML, dropping empty documents.
func splitDocs(s string) (Manifest, error) {
	var m Manifest
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(s)))
	for {
		raw, err := r.Read()
		if errors.Is(err, io.EOF) {
			return m, nil
		}
		if err != nil {
			return m, err
		}
		source := ""
		for _, line := range strings.Split(string(raw), "\n") {
			if rest, ok := strings.CutPrefix(line, "# Source: "); ok {
				source = rest
			}
		}
		j, err := yaml.YAMLToJSONStrict(raw)
		if err != nil {
			return m, errors.New(source + ": " + err.Error())
		}
		if string(j) == "null" {
			continue
		}
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(j, &head); err != nil {
			return m, errors.New(source + ": " + err.Error())
		}
		m.Docs = append(m.Docs, Doc{Source: source, APIVersion: head.APIVersion, Kind: head.Kind,
			Name: head.Metadata.Name, Namespace: head.Metadata.Namespace, JSON: j})
	}
}
