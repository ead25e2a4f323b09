//go:build interop

package schemathesis

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/carbongate/carbongate/test/services"
)

// Settings of the run: a fixed seed so every run sends the same requests,
// and a bounded number of examples per operation so the run takes about a
// minute on 2 cores.
const (
	seed        = "20210601"
	maxExamples = "1000"
	runTimeout  = 4 * time.Minute
)

// checks are every Schemathesis check but positive_data_acceptance: a
// request the schema allows may still be refused for reasons no schema can
// state (an unknown zone or region is 400, a deadline no window fits is
// 422), so "schema-valid means 2xx" does not hold for this API. The
// stateful checks (use_after_free, ensure_resource_availability) and the
// auth checks have nothing to act on: the API creates no resources and
// declares no security schemes.
const checks = "all"

const excludedChecks = "positive_data_acceptance"

// TestOpenAPIConformance starts carbongate (replay clock, bundled data, zone
// cap on so "capped" answers occur) and runs Schemathesis against the
// OpenAPI document it serves. Any failed check fails the test with
// Schemathesis' report; so does a server error in the gateway's log.
func TestOpenAPIConformance(t *testing.T) {
	venv := services.Venv(t, SchemathesisEnv)
	base, gw := startGateway(t, "--zone-cap-share", "0.5", "--zone-cap-min", "3", "--admission")
	// The Carbon Aware SDK's routes have their own run (casdk_test.go).
	// Schemathesis leaves out the operation that serves the document it
	// loaded (GET /openapi.json) unless a filter names it.
	ops := countOperations(t, services.Call(t, http.MethodGet, base+"/openapi.json", nil), func(path string) bool {
		return !strings.HasPrefix(path, "/casdk/") && path != "/openapi.json"
	})
	run(t, venv, t.TempDir(), maxExamples, ops, "run", base+"/openapi.json", "--exclude-path-regex", "^/casdk/")
	if log := gw.Log(); strings.Contains(log, `"level":"ERROR"`) {
		t.Fatalf("the gateway logged errors during the run:\n%s", errorLines(log))
	}
}

// startGateway starts carbongate on a free port (replay clock from
// 2021-06-01, bundled data, no access log) with extra flags, and returns
// its base URL once it is ready.
func startGateway(t *testing.T, extra ...string) (string, *services.Proc) {
	t.Helper()
	bin := services.GoBuild(t, "carbongate")
	var base string
	gw := services.StartBinary(t, services.Binary{
		Name: "carbongate", Path: filepath.Join(bin, "carbongate"),
		ArgsFor: func() []string {
			p := services.FreePort(t)
			base = fmt.Sprintf("http://127.0.0.1:%d", p)
			return append([]string{"--addr", fmt.Sprintf("127.0.0.1:%d", p), "--clock", "replay",
				"--replay-start", "2021-06-01T00:00:00Z", "--drain-delay", "0s", "--access-log=false"}, extra...)
		},
		Ready: func(ctx context.Context) error { return services.HTTPReady(base + "/readyz")(ctx) },
	})
	return base, gw
}

// run runs Schemathesis with args (a "run" command and what it tests),
// at most examples cases per operation and phase, and the settings every
// run shares, in dir (Schemathesis and Hypothesis
// write nothing into the tree). Failures, a run that does not finish
// within runTimeout, and a run that tested fewer than ops operations or
// passed fewer than minCasesPerOperation cases per operation on average
// fail the test: an exit code of 0 alone is no evidence.
func run(t *testing.T, venv, dir, examples string, ops int, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	args = append(args, "--checks", checks, "--exclude-checks", excludedChecks,
		"--max-examples", examples, "--seed", seed, "--workers", "1",
		"--generation-database", "none", "--request-timeout", "10",
		"--no-color", "--output-truncate", "false")
	cmd := exec.CommandContext(ctx, filepath.Join(venv, "bin", "schemathesis"), args...)
	cmd.Dir = dir
	cmd.Env = append(cmd.Environ(), "PYTHONDONTWRITEBYTECODE=1", "SCHEMATHESIS_HOOKS=", "NO_COLOR=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	t0 := time.Now()
	err := cmd.Run()
	report := out.String()
	t.Logf("schemathesis ran %v:\n%s", time.Since(t0).Round(time.Second), summary(report))
	if ctx.Err() != nil {
		t.Fatalf("schemathesis did not finish within %v:\n%s", runTimeout, report)
	}
	if err != nil {
		t.Fatalf("schemathesis found failures (%v):\n%s", err, report)
	}
	checkCoverage(t, report, ops)
}

// minCasesPerOperation is the fewest passed cases per tested operation, on
// average, a run must show.
const minCasesPerOperation = 20

var (
	testedRe = regexp.MustCompile(`(?m)^\s*Tested: (\d+)\s*$`)
	passedRe = regexp.MustCompile(`(?m)^\s*(\d+) generated, (\d+) passed`)
)

// checkCoverage reads the report's summary: every one of the ops
// operations tested, every generated case passed, and enough of them.
func checkCoverage(t *testing.T, report string, ops int) {
	t.Helper()
	tm, pm := testedRe.FindStringSubmatch(report), passedRe.FindStringSubmatch(report)
	if tm == nil || pm == nil {
		t.Fatalf("schemathesis' summary has no tested operations or passed cases:\n%s", summary(report))
	}
	tested, _ := strconv.Atoi(tm[1])
	generated, _ := strconv.Atoi(pm[1])
	passed, _ := strconv.Atoi(pm[2])
	if tested < ops {
		t.Fatalf("schemathesis tested %d operations of the %d the document has", tested, ops)
	}
	if passed != generated || passed < minCasesPerOperation*tested {
		t.Fatalf("schemathesis passed %d of %d generated cases over %d operations, want all and at least %d per operation",
			passed, generated, tested, minCasesPerOperation)
	}
	t.Logf("schemathesis: %d operations, %d cases passed", tested, passed)
}

// countOperations counts the operations (path × method) of an OpenAPI or
// Swagger document, JSON or YAML, whose path keep accepts.
func countOperations(t *testing.T, doc []byte, keep func(path string) bool) int {
	t.Helper()
	var d struct {
		Paths map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(doc, &d); err != nil {
		t.Fatalf("OpenAPI document: %v", err)
	}
	n := 0
	for path, item := range d.Paths {
		if !keep(path) {
			continue
		}
		for method := range item {
			switch strings.ToLower(method) {
			case "get", "put", "post", "delete", "options", "head", "patch", "trace":
				n++
			}
		}
	}
	if n == 0 {
		t.Fatal("the OpenAPI document has no operation to test")
	}
	return n
}

// summary is the report from its summary on, or its tail.
func summary(report string) string {
	if i := strings.LastIndex(report, "SUMMARY"); i >= 0 {
		return report[max(0, strings.LastIndex(report[:i], "\n")):]
	}
	if len(report) > 4000 {
		return "...\n" + report[len(report)-4000:]
	}
	return report
}

func errorLines(log string) string {
	var b strings.Builder
	for line := range strings.Lines(log) {
		if strings.Contains(line, `"level":"ERROR"`) {
			b.WriteString(line)
		}
	}
	return b.String()
}
