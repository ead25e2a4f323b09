//go:build interop

package alerts

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
	"github.com/carbongate/carbongate/forecast/store/connect"
	"github.com/carbongate/carbongate/test/services"
)

// query is one PromQL expression and where it comes from.
type query struct{ where, expr string }

// dashboardQueries returns every PromQL expression of the dashboard: the
// panels' targets (rows' panels included) and the templating queries
// (label_values(selector, label): the selector).
func dashboardQueries(t *testing.T) []query {
	t.Helper()
	b, err := os.ReadFile(dashboardPath(t))
	if err != nil {
		t.Fatal(err)
	}
	type panel struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
		Panels json.RawMessage `json:"panels"`
	}
	var d struct {
		Panels     []panel `json:"panels"`
		Templating struct {
			List []struct {
				Name  string          `json:"name"`
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("dashboard.json: %v", err)
	}
	var out []query
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for i, tg := range p.Targets {
				out = append(out, query{fmt.Sprintf("panel %q target %d", p.Title, i), tg.Expr})
			}
			if len(p.Panels) > 0 {
				var sub []panel
				if err := json.Unmarshal(p.Panels, &sub); err != nil {
					t.Fatalf("panel %q: %v", p.Title, err)
				}
				walk(sub)
			}
		}
	}
	walk(d.Panels)
	labelValues := regexp.MustCompile(`^\s*label_values\(\s*(.+?)\s*,\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)\s*$`)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			if err := json.Unmarshal(v.Query, &q.Query); err != nil {
				t.Fatalf("variable %s: query %s", v.Name, v.Query)
			}
		}
		m := labelValues.FindStringSubmatch(q.Query)
		if m == nil {
			t.Fatalf("variable %s: query %q is not label_values(selector, label)", v.Name, q.Query)
		}
		out = append(out, query{"variable " + v.Name, m[1]})
	}
	return out
}

// exported maps the metric families a scrape showed to their types.
type exported map[string]dto.MetricType

// has reports whether name is an exported series name: a family, or a
// histogram's (or summary's) _bucket, _sum or _count.
func (e exported) has(name string) bool {
	if _, ok := e[name]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suffix)
		if !ok {
			continue
		}
		switch e[base] {
		case dto.MetricType_HISTOGRAM:
			return true
		case dto.MetricType_SUMMARY:
			return suffix != "_bucket"
		}
	}
	return false
}

// ControllerPrefix starts the names of the controller's metrics.
const ControllerPrefix = "carbongate_controller_"

// missing returns, per query, the metric names it uses that e lacks.
func (e exported) missing(t *testing.T, qs []query) []string {
	t.Helper()
	var out []string
	for _, q := range qs {
		names, err := metricNames(q.expr)
		if err != nil {
			t.Fatalf("%s: %v", q.where, err)
		}
		if len(names) == 0 {
			t.Errorf("%s: %q names no metric", q.where, q.expr)
		}
		for _, n := range names {
			// The controller's metrics exist only where it runs against an
			// API server: test/kube checks those names (TestKubernetes/Controller).
			if !e.has(n) && !strings.HasPrefix(n, ControllerPrefix) {
				out = append(out, q.where+": "+n)
			}
		}
	}
	return out
}

// scrape adds the metric families of url's /metrics to e.
func (e exported) scrape(t *testing.T, url string) {
	t.Helper()
	body := services.Call(t, http.MethodGet, url, nil)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("%s: %v", url, err)
	}
	for name, f := range fams {
		e[name] = f.GetType()
	}
}

// TestExportedMetricsCheck is the positive control of
// TestQueriesUseExportedMetrics: names a scrape lacks are reported, the
// suffixes of histograms are recognised, and not those of gauges.
func TestExportedMetricsCheck(t *testing.T) {
	t.Parallel()
	e := exported{"a_total": dto.MetricType_COUNTER, "h_seconds": dto.MetricType_HISTOGRAM, "g": dto.MetricType_GAUGE, "s": dto.MetricType_SUMMARY}
	got := e.missing(t, []query{
		{"q1", `sum(rate(a_total[5m])) / sum(rate(b_total[5m]))`},
		{"q2", `histogram_quantile(0.9, rate(h_seconds_bucket[5m])) + h_seconds_sum + h_seconds_count`},
		{"q3", `g_count + g + s_sum + s_bucket`},
	})
	want := []string{"q1: b_total", "q3: g_count", "q3: s_bucket"}
	if !slices.Equal(got, want) {
		t.Fatalf("missing = %q, want %q", got, want)
	}
}

// TestQueriesUseExportedMetrics starts carbonserve with a DE model, a
// gateway that routes DE to it and SE to an endpoint that is never ready
// (embedded registry, admission webhook, zone cap, a vendor forecast
// answering 503), and a gateway in
// production mode that ingests DE from a recorded Electricity Maps answer
// (one 429 first, one hour repeated) into PostgreSQL seeded with an older
// hour (a gap); it exercises them, scrapes the three
// /metrics until every metric an alert or a dashboard query names has
// appeared, and fails naming those that did not within a minute.
func TestQueriesUseExportedMetrics(t *testing.T) {
	t.Parallel()
	var qs []query
	for name, expr := range alertExprs(t) {
		qs = append(qs, query{"alert " + name, expr})
	}
	qs = append(qs, dashboardQueries(t)...)
	sort.Slice(qs, func(i, j int) bool { return qs[i].where < qs[j].where })

	bin := services.GoBuild(t, "carbongate", "carbonserve", "carbonctl")
	models := filepath.Join(t.TempDir(), "models")
	services.Run(t, filepath.Join(bin, "carbonctl"), "train", "--data", "bundled", "--until", "2021-01-01T00:00:00Z",
		"--signal", "lifecycle", "--zones", "DE", "--out", models)

	const model = "carbon-forecaster-DE"
	var serveURL, serveGRPC string
	services.StartBinary(t, services.Binary{
		Name: "carbonserve", Path: filepath.Join(bin, "carbonserve"),
		ArgsFor: func() []string {
			hp, gp := services.FreePort(t), services.FreePort(t)
			serveURL, serveGRPC = fmt.Sprintf("http://127.0.0.1:%d", hp), fmt.Sprintf("127.0.0.1:%d", gp)
			return []string{"--host", "127.0.0.1", "--http_port", strconv.Itoa(hp), "--grpc_port", strconv.Itoa(gp),
				"--model_dir", filepath.Join(models, "lifecycle", "DE"), "--model_name", model, "--drain-delay", "0s"}
		},
		Ready: func(ctx context.Context) error { return services.OIPReady(serveURL, serveGRPC, model)(ctx) },
	})
	notReady := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"error":"Model carbon-forecaster-SE is not ready"}`)
	}))
	t.Cleanup(notReady.Close)
	routes := filepath.Join(t.TempDir(), "routes.yaml")
	if err := os.WriteFile(routes, []byte(fmt.Sprintf("- {zone: DE, protocol: rest, url: %q, model: %s}\n- {zone: SE, protocol: rest, url: %q, model: carbon-forecaster-SE}\n",
		serveURL, model, notReady.URL)), 0o644); err != nil {
		t.Fatal(err)
	}
	gateway := services.StartGateway(t, filepath.Join(bin, "carbongate"), "--routes", routes, "--registry", filepath.Join(t.TempDir(), "registry.db"),
		"--admission", "--zone-cap-share", "0.5", "--zone-cap-min", "1", "--upstream-timeout", "500ms",
		"--vendor-forecast", "electricitymaps", "--electricitymaps-token", "test-token", "--electricitymaps-url", notReady.URL)

	em := recordedEM(t, "test-token")
	storeURL := seededStore(t)
	production := services.StartGateway(t, filepath.Join(bin, "carbongate"), "--store", storeURL,
		"--ingest-zones", "DE", "--electricitymaps-url", em.URL, "--electricitymaps-token", "test-token",
		"--replay-start", "2024-03-06T20:00:00Z")

	for range 4 {
		post(t, gateway+"/v1/schedule", `{"zones":["DE","SE","PL"],"duration":"PT3H"}`)
	}
	post(t, gateway+"/v1/admission/mutate", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1",
		"kind":{"group":"carbongate.io","version":"v1alpha1","kind":"VmTemplate"},"operation":"DELETE"}}`)

	var missing []string
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(500 * time.Millisecond) {
		e := exported{}
		for _, base := range []string{gateway, production, serveURL} {
			e.scrape(t, base+"/metrics")
		}
		if missing = e.missing(t, qs); len(missing) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(missing) > 0 {
		t.Fatalf("metrics named by alerts or dashboard queries that no binary exported within a minute:\n  %s", strings.Join(missing, "\n  "))
	}
	t.Logf("%d alert expressions and dashboard queries: every metric they name is exported", len(qs))
}

// seededStore returns the URL of a new PostgreSQL database holding the
// store's tables and one observation of DE, on 2024-03-01: older than the
// recorded answer reaches back, so the poller records a gap.
func seededStore(t *testing.T) string {
	t.Helper()
	url := services.StartPostgres(t).Database(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := connect.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	obs := []store.Observation{{Time: time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC), Value: 500}}
	if err := db.UpsertObserved(ctx, "DE", forecast.SignalLifecycle, obs); err != nil {
		t.Fatal(err)
	}
	return url
}

// recordedEM serves the recorded Electricity Maps /history answer for DE,
// with one hour repeated (a dropped duplicate), to the right token, after
// answering the first request 429.
func recordedEM(t *testing.T, token string) *httptest.Server {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(services.RepoRoot(t), "gateway", "ingest", "electricitymaps", "testdata", "history_DE.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	hist, _ := doc["history"].([]any)
	if len(hist) < 2 {
		t.Fatalf("history_DE.json: %d hours", len(hist))
	}
	doc["history"] = append(hist, hist[1])
	body, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case calls.Add(1) == 1:
			w.Header().Set("Retry-After", "0")
			http.Error(w, `{"message":"rate limited"}`, http.StatusTooManyRequests)
		case r.Header.Get("auth-token") != token:
			http.Error(w, `{"message":"Invalid auth-token"}`, http.StatusUnauthorized)
		default:
			w.Header().Set("Content-Type", "application/json")
			w.Write(body)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func post(t *testing.T, url, body string) {
	t.Helper()
	services.Call(t, http.MethodPost, url, []byte(body))
}
