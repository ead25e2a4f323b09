//go:build interop

package opa

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/test/services"
)

// minCoverage is the least `opa test --coverage` may report for the policy
// files (tests excluded).
const minCoverage = 95.0

// TestPolicyUnitTests runs the bundle's own Rego tests, the formatter and
// the strict checker.
func TestPolicyUnitTests(t *testing.T) {
	opa := services.OPABinary(t)
	out := services.RunOPA(t, opa, "test", "deploy/opa", "-v")
	t.Logf("opa test deploy/opa -v:\n%s", tail(string(out), 400))
	services.RunOPA(t, opa, "check", "--strict", "deploy/opa")
	services.RunOPA(t, opa, "fmt", "--list", "--fail", "deploy/opa")

	var cov struct {
		Files map[string]struct {
			CoveredLines    int `json:"covered_lines"`
			NotCoveredLines int `json:"not_covered_lines"`
		} `json:"files"`
	}
	if err := json.Unmarshal(services.RunOPA(t, opa, "test", "deploy/opa", "--coverage", "--format", "json"), &cov); err != nil {
		t.Fatal(err)
	}
	var covered, all int
	for name, f := range cov.Files {
		if strings.HasSuffix(name, "_test.rego") {
			continue
		}
		covered += f.CoveredLines
		all += f.CoveredLines + f.NotCoveredLines
	}
	if all == 0 {
		t.Fatal("opa test --coverage reported no policy lines")
	}
	pct := 100 * float64(covered) / float64(all)
	t.Logf("policy coverage: %.1f%% (%d of %d lines)", pct, covered, all)
	if pct < minCoverage {
		t.Errorf("policy coverage %.1f%%, want at least %.0f%%", pct, minCoverage)
	}
}

// TestFixtures runs every admission fixture through a real OPA serving the
// bundle, with carbongate up, slow, answering 500 or killed as the fixture
// asks.
func TestFixtures(t *testing.T) {
	opa := services.OPABinary(t)
	bundle := services.BuildOPABundle(t, opa)
	gate, carbongate := startCarbongate(t)
	fixtures := loadFixtures(t)

	up := proxy(t, carbongate)
	backends := map[string]*backend{"up": up, "error422": up, "slow": slow(t, carbongate), "error500": failing(t)}
	url := func(f fixture) string {
		if f.want.Carbongate == "down" {
			return carbongate // killed before these fixtures run
		}
		return backends[f.want.Carbongate].srv.URL
	}

	// One OPA per backend and fail mode, started up front, without caching:
	// each review asks carbongate, so the answer a backend saw last is the
	// one OPA used.
	servers := map[opaConfig]string{}
	for _, f := range fixtures {
		c := opaConfig{carbongate: url(f), failOpen: f.want.FailOpen}
		if _, ok := servers[c]; !ok {
			_, servers[c] = startOPA(t, opa, bundle, c)
		}
	}

	run := func(f fixture) {
		t.Run(f.name, func(t *testing.T) {
			o := servers[opaConfig{carbongate: url(f), failOpen: f.want.FailOpen}]
			start := time.Now()
			raw := post(t, o+"/v0/data/carbongate/admission/response", f.review)
			elapsed := time.Since(start)
			f.check(t, raw, f.sent(t, backends[f.want.Carbongate]))
			if f.want.Carbongate == "slow" && (elapsed < callTimeout || elapsed > callTimeout+3*time.Second) {
				t.Errorf("the slow review took %v, want about the call timeout %v", elapsed, callTimeout)
			}
			if len(f.want.EligibleZones) == 0 {
				samePaths(t, o, f)
			}
		})
	}
	for _, f := range fixtures {
		if f.want.Carbongate != "down" {
			run(f)
		}
	}

	t.Run("cache", func(t *testing.T) { testCache(t, opa, bundle, up, fixtures) })

	// carbongate down: its process killed, OPA pointed straight at it.
	gate.Kill()
	for _, f := range fixtures {
		if f.want.Carbongate == "down" {
			run(f)
		}
	}
}

// sent checks that the backend got the /v1/schedule call the fixture
// implies and returns carbongate's 200 answer to it (nil when there is
// none).
func (f fixture) sent(t *testing.T, b *backend) *scheduleAnswer {
	t.Helper()
	if b == nil || len(f.want.EligibleZones) == 0 {
		return nil
	}
	x, calls := b.seen(f.scheduleBody(t))
	if calls == 0 {
		t.Fatalf("carbongate was not asked %s", f.scheduleBody(t))
	}
	switch f.want.Carbongate {
	case "error422":
		if x.status != http.StatusUnprocessableEntity {
			t.Fatalf("carbongate answered %d, want 422 (the fixture's deadline must be infeasible): %s", x.status, x.body)
		}
	case "up":
		if x.status != http.StatusOK {
			t.Fatalf("carbongate answered %d: %s", x.status, x.body)
		}
		var a scheduleAnswer
		if err := json.Unmarshal(x.body, &a); err != nil {
			t.Fatalf("carbongate's answer: %v", err)
		}
		if bytes.Contains(x.body, []byte(`"alternatives"`)) {
			t.Errorf("carbongate sent its full answer, want the minimal one the policy asks for (Prefer: return=minimal): %s", x.body)
		}
		if _, ok := f.want.Representatives[a.Decision.Zone]; !ok {
			t.Fatalf("carbongate chose %s; want.json has no representative for it", a.Decision.Zone)
		}
		return &a
	}
	return nil
}

// samePaths checks that OPA's three ways to the decision agree: the
// webhook path (/v0/data/…/response), the default decision (POST /) and
// the Data API (/v1/data/…/response with {"input": review}).
func samePaths(t *testing.T, opaURL string, f fixture) {
	t.Helper()
	v0 := post(t, opaURL+"/v0/data/carbongate/admission/response", f.review)
	root := post(t, opaURL+"/", f.review)
	var v1 struct {
		Result json.RawMessage `json:"result"`
	}
	in := append(append([]byte(`{"input":`), f.review...), '}')
	if err := json.Unmarshal(post(t, opaURL+"/v1/data/carbongate/admission/response", in), &v1); err != nil {
		t.Fatal(err)
	}
	if canonical(v0) != canonical(root) || canonical(v0) != canonical(v1.Result) {
		t.Errorf("decision paths disagree:\n/v0: %s\n/:   %s\n/v1: %s", v0, root, v1.Result)
	}
}

// testCache checks that with caching on, identical reviews within
// cache_seconds ask carbongate once and get the same patch.
func testCache(t *testing.T, opa, bundle string, b *backend, fixtures []fixture) {
	i := slices.IndexFunc(fixtures, func(f fixture) bool { return f.name == "create-scheduled-eu" })
	if i < 0 {
		t.Fatal("no fixture create-scheduled-eu")
	}
	f := fixtures[i]
	_, o := startOPA(t, opa, bundle, opaConfig{carbongate: b.srv.URL, cacheSeconds: 60})
	_, before := b.seen(f.scheduleBody(t))
	first := post(t, o+"/v0/data/carbongate/admission/response", f.review)
	second := post(t, o+"/v0/data/carbongate/admission/response", f.review)
	_, after := b.seen(f.scheduleBody(t))
	if got := after - before; got != 1 {
		t.Errorf("two identical reviews asked carbongate %d times, want 1", got)
	}
	if !bytes.Equal(first, second) {
		t.Errorf("cached answer differs:\n%s\n%s", first, second)
	}
	f.check(t, second, f.sent(t, b))
}

// post POSTs body as JSON and returns the 200 answer.
func post(t *testing.T, url string, body []byte) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{}).Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %s\n%s", url, resp.Status, b)
	}
	return b
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
