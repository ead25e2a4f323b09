//go:build interop

package schemathesis

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	run(t, venv, t.TempDir(), maxExamples, "run", base+"/openapi.json", "--exclude-path-regex", "^/casdk/")
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
// within runTimeout and a run that tests nothing fail the test.
func run(t *testing.T, venv, dir, examples string, args ...string) {
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
	if !strings.Contains(report, "passed") {
		t.Fatalf("schemathesis ran no test case:\n%s", report)
	}
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
