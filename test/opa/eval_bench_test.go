//go:build interop

package opa

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/carbongate/carbongate/test/services"
)

// benchFixtures are the reviews BenchmarkPolicyEval times: a scheduled
// review with residency, one without a deadline, one with several regions
// per zone, and a denial (nothing eligible).
var benchFixtures = []string{"create-scheduled-eu", "no-deadline", "representative-per-zone", "residency-excludes-all"}

// BenchmarkPolicyEval (-benchtime 1x) runs `opa bench` on the bundle for
// each of benchFixtures, with http.send answered by testdata/send_mock.rego,
// and reports OPA's evaluation cost per review (ns/op, B/op, allocs/op) with
// the server's store setting: evaluation alone, without HTTP, input
// decoding or http.send's cache. On a shared machine ns/op moves with the
// load; allocs/op does not.
func BenchmarkPolicyEval(b *testing.B) {
	opa := services.OPABinary(b)
	for _, name := range benchFixtures {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				out := services.RunOPA(b, opa, "bench", "--bundle", "deploy/opa", "--ignore", "*_test.rego",
					"--data", filepath.Join("test", "opa", "testdata", "send_mock.rego"),
					"--input", filepath.Join("test", "fixtures", "admission", name, "review.json"),
					"--metrics=false", "--benchmem", "--format", "gobench", services.OPAStoreFlag,
					"data.carbongate.admission.response with http.send as data.carbongate_bench.send")
				ns, bytes, allocs, err := parseGobench(string(out))
				if err != nil {
					b.Fatalf("opa bench: %v\n%s", err, out)
				}
				fmt.Printf("policy eval %-26s %8.0f ns/op %7.0f B/op %5.0f allocs/op\n", name, ns, bytes, allocs)
				b.ReportMetric(ns, "opa-ns/op")
				b.ReportMetric(allocs, "opa-allocs/op")
			}
		})
	}
}

// parseGobench reads the first result line of `opa bench --format gobench`:
// "BenchmarkOPAEval  N  X ns/op  Y B/op  Z allocs/op".
func parseGobench(out string) (ns, bytes, allocs float64, err error) {
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) < 8 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		vals := map[string]float64{}
		for i := 2; i+1 < len(f); i += 2 {
			v, perr := strconv.ParseFloat(f[i], 64)
			if perr != nil {
				return 0, 0, 0, fmt.Errorf("%q: %v", line, perr)
			}
			vals[f[i+1]] = v
		}
		return vals["ns/op"], vals["B/op"], vals["allocs/op"], nil
	}
	return 0, 0, 0, fmt.Errorf("no benchmark line")
}
