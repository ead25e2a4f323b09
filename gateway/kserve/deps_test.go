package kserve_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// heavyPrefixes are the import paths only gateway/kserve may pull in.
var heavyPrefixes = []string{
	"github.com/kserve/",
	"k8s.io/",
	"sigs.k8s.io/",
	"knative.dev/",
	"istio.io/",
	"github.com/kedacore/",
}

// TestCoreHasNoKubernetesDeps pins that carbonserve and the core packages do
// not depend on KServe or the Kubernetes libraries. The same check from a
// shell:
//
//	go list -deps ./cmd/carbonserve ./forecast/... ./models/... ./oip/... ./gateway/route | grep -E '^(github.com/kserve|k8s.io|sigs.k8s.io|knative.dev|istio.io)/'
func TestCoreHasNoKubernetesDeps(t *testing.T) {
	t.Parallel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed for this test: %v", err)
	}
	const mod = "github.com/carbongate/carbongate/"
	roots := []string{mod + "cmd/carbonserve", mod + "forecast/...", mod + "models/...", mod + "oip/...", mod + "gateway/route"}
	// -e: report packages that fail to load instead of stopping, so a broken
	// sibling package does not hide an import.
	cmd := exec.Command(goBin, append([]string{"list", "-e", "-deps", "-json=ImportPath,Imports,DepOnly,Error"}, roots...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	type pkg struct {
		ImportPath string
		Imports    []string
		DepOnly    bool
	}
	importers := map[string][]string{} // heavy package -> who imports it
	n, heavy := 0, 0
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		n++
		for _, imp := range p.Imports {
			if isHeavy(imp) && !isHeavy(p.ImportPath) {
				importers[imp] = append(importers[imp], p.ImportPath)
			}
		}
		if isHeavy(p.ImportPath) {
			heavy++
		}
	}
	if n == 0 {
		t.Fatal("go list returned no packages")
	}
	for imp, by := range importers {
		t.Errorf("%s is imported by %s", imp, strings.Join(by, ", "))
	}
	if heavy > 0 && len(importers) == 0 {
		t.Errorf("%d KServe/Kubernetes packages in the dependencies", heavy)
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
