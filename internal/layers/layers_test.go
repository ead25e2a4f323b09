package layers

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/carbongate/carbongate"

// A layer is a set of packages, named by path relative to the module: a
// path matches a package and, with "/...", its subpackages; the longest
// match decides a package's layer.
type layer struct {
	name  string
	paths []string
	// may lists the layers its packages may import besides their own.
	may []string
	// apart: packages of this layer do not import one another (the edges
	// are siblings), except within one subtree.
	apart bool
}

// table is the README's layout as allowed edges, lowest layer first. The
// forecast package itself (types, error vocabulary, window search) is
// below everything and imports nothing of the module; internal/ holds the
// cross-cutting utilities that every layer may import and that import no
// layer but the forecast package's error vocabulary.
var table = []layer{
	{name: "kernel", paths: []string{"forecast"}},
	{name: "cross-cutting", paths: []string{"internal/..."}, may: []string{"kernel"}},
	{name: "domain", paths: []string{"forecast/..."}, may: []string{"kernel", "cross-cutting"}},
	{name: "protocol", paths: []string{"oip/..."}, may: []string{"kernel", "cross-cutting", "domain"}},
	{name: "registry", paths: []string{"registry/..."}, may: []string{"kernel", "cross-cutting", "domain"}},
	{name: "models", paths: []string{"models/..."}, may: []string{"kernel", "cross-cutting", "domain", "protocol", "registry"}},
	{name: "gateway", paths: []string{"gateway/..."}, may: []string{"kernel", "cross-cutting", "domain", "protocol", "registry", "models"}},
	{name: "edges", apart: true,
		paths: []string{"gateway/httpapi/...", "gateway/casdk/...", "gateway/admission/...", "gateway/controller/..."},
		may:   []string{"kernel", "cross-cutting", "domain", "protocol", "registry", "models", "gateway"}},
	{name: "wiring", paths: []string{"gateway/wiring/...", "gateway/runtime/..."},
		may: []string{"kernel", "cross-cutting", "domain", "protocol", "registry", "models", "gateway", "edges"}},
	{name: "deployment", paths: []string{"deploy/..."}, may: []string{"kernel", "cross-cutting", "domain"}},
	{name: "binaries", paths: []string{"cmd/..."},
		may: []string{"kernel", "cross-cutting", "domain", "protocol", "registry", "models", "gateway", "edges", "wiring", "deployment"}},
	{name: "tests", paths: []string{"test/..."},
		may: []string{"kernel", "cross-cutting", "domain", "protocol", "registry", "models", "gateway", "edges", "wiring", "deployment", "binaries"}},
}

// heavyPrefixes are the import paths of the Kubernetes and KServe
// libraries; lightRoots (and everything they import) must not need them:
// carbonserve and the core run without a cluster. carbongate and carbonctl
// reach them only through gateway/kserve's own subset of KServe's types,
// the webhook and the controller.
var (
	heavyPrefixes = []string{"github.com/kserve/", "k8s.io/", "sigs.k8s.io/", "knative.dev/", "istio.io/", "github.com/kedacore/"}
	lightRoots    = []string{"cmd/carbonserve", "forecast/...", "models/...", "oip/...", "gateway/route", "internal/..."}
)

type pkg struct {
	ImportPath string
	Imports    []string
	DepOnly    bool
	Error      *struct{ Err string }
}

// list returns the module's packages (built with the interop tag, so that
// the test harness counts too) and their dependencies, by import path.
func list(t *testing.T) map[string]pkg {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed for this test: %v", err)
	}
	// -e: report packages that fail to load instead of stopping, so a
	// broken sibling package does not hide an import.
	cmd := exec.Command(goBin, "list", "-e", "-deps", "-tags", "interop", "-json=ImportPath,Imports,DepOnly,Error", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	pkgs := map[string]pkg{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		pkgs[p.ImportPath] = p
	}
	if len(pkgs) < 50 {
		t.Fatalf("go list returned %d packages, too few for this module", len(pkgs))
	}
	return pkgs
}

// rel returns path relative to the module, false outside it.
func rel(path string) (string, bool) {
	if path == module {
		return "", true
	}
	r, ok := strings.CutPrefix(path, module+"/")
	return r, ok
}

// matches reports whether pattern (a path or path/...) covers p, and how
// specifically.
func matches(pattern, p string) (int, bool) {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return len(base), p == base || strings.HasPrefix(p, base+"/")
	}
	return len(pattern) + 1, p == pattern // an exact path beats its own /...
}

// layerOf returns the layer of p and the pattern that placed it.
func layerOf(p string) (*layer, string) {
	var best *layer
	var by string
	n := -1
	for i := range table {
		for _, pat := range table[i].paths {
			if m, ok := matches(pat, p); ok && m > n {
				best, by, n = &table[i], pat, m
			}
		}
	}
	return best, by
}

// TestLayerEdges checks every import between the module's packages
// (their non-test files) against table, and names each offending import.
func TestLayerEdges(t *testing.T) {
	t.Parallel()
	pkgs := list(t)
	paths := make([]string, 0, len(pkgs))
	for path := range pkgs {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	n := 0
	for _, path := range paths {
		p := pkgs[path]
		from, ok := rel(p.ImportPath)
		if !ok || p.DepOnly {
			continue
		}
		if p.Error != nil {
			t.Errorf("%s does not load: %s", from, p.Error.Err)
		}
		fl, fpat := layerOf(from)
		if fl == nil {
			t.Errorf("%s is in no layer: add it to the table (and to the README's layout)", from)
			continue
		}
		n++
		for _, imp := range p.Imports {
			to, ok := rel(imp)
			if !ok {
				continue
			}
			tl, tpat := layerOf(to)
			switch {
			case tl == nil:
				t.Errorf("%s imports %s, which is in no layer", from, to)
			case tl == fl && fl.apart && fpat != tpat:
				t.Errorf("%s imports %s: the %s do not import one another; move what they share into a lower package", from, to, fl.name)
			case tl != fl && !slices.Contains(fl.may, tl.name):
				t.Errorf("%s (layer %s) imports %s (layer %s), which the %s layer may not: it may import %s",
					from, fl.name, to, tl.name, fl.name, strings.Join(append([]string{fl.name}, fl.may...), ", "))
			}
		}
	}
	t.Logf("%d packages checked against %d layers", n, len(table))
}

// TestTableIsOrdered: a layer may import only layers listed before it, so
// the table has no cycle and reads lowest first, as the README does.
func TestTableIsOrdered(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, l := range table {
		for _, m := range l.may {
			if !seen[m] {
				t.Errorf("layer %s may import %s, which is not below it", l.name, m)
			}
		}
		seen[l.name] = true
	}
	for _, c := range []struct{ path, layer string }{
		{"forecast", "kernel"}, {"forecast/store/postgres", "domain"}, {"internal/pgwire", "cross-cutting"},
		{"gateway", "gateway"}, {"gateway/httpedge", "gateway"}, {"gateway/hold/v1alpha1", "gateway"}, {"gateway/httpapi", "edges"},
		{"gateway/wiring", "wiring"}, {"cmd/internal/cli", "binaries"}, {"test/testsupport", "tests"},
	} {
		if l, _ := layerOf(c.path); l == nil || l.name != c.layer {
			t.Errorf("%s is placed in %v, want %s", c.path, l, c.layer)
		}
	}
}

// TestCoreHasNoKubernetesDeps pins that carbonserve and the core packages
// do not depend on KServe or the Kubernetes libraries. The same check from
// a shell:
//
//	go list -deps ./cmd/carbonserve ./forecast/... ./models/... ./oip/... ./gateway/route ./internal/... | grep -E '^(github.com/kserve|k8s.io|sigs.k8s.io|knative.dev|istio.io)/'
func TestCoreHasNoKubernetesDeps(t *testing.T) {
	t.Parallel()
	pkgs := list(t)
	// Walk the dependencies of the light roots, remembering who brought
	// each package in, and report the module packages that import a heavy
	// one directly.
	var queue []string
	for path, p := range pkgs {
		if r, ok := rel(path); ok && !p.DepOnly {
			for _, root := range lightRoots {
				if _, ok := matches(root, r); ok {
					queue = append(queue, path)
					break
				}
			}
		}
	}
	if len(queue) == 0 {
		t.Fatal("no package matched the light roots")
	}
	seen := map[string]bool{}
	importers := map[string][]string{} // heavy package -> who imports it
	for len(queue) > 0 {
		path := queue[0]
		queue = queue[1:]
		if seen[path] {
			continue
		}
		seen[path] = true
		for _, imp := range pkgs[path].Imports {
			if isHeavy(imp) && !isHeavy(path) {
				importers[imp] = append(importers[imp], path)
			}
			queue = append(queue, imp)
		}
	}
	heavy := make([]string, 0, len(importers))
	for imp := range importers {
		heavy = append(heavy, imp)
	}
	sort.Strings(heavy)
	for _, imp := range heavy {
		t.Errorf("%s is imported by %s", imp, strings.Join(importers[imp], ", "))
	}
}

func isHeavy(path string) bool {
	for _, p := range heavyPrefixes {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}
