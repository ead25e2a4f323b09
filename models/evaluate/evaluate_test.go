package evaluate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
	"github.com/carbongate/carbongate/models/evaluate"
)

// scored writes ten daily issues of version 1 (error 1 %, 2 %, … 10 % by
// issue) and of version 2 (error 5 % × lead day, with a ±10 % interval)
// and scores them.
func scored(t *testing.T) *evaluate.Report {
	t.Helper()
	m := fixture(t, 20)
	for i := range 10 {
		at := day0.AddDate(0, 0, i)
		write(t, m, "carbon-forecaster-DE",
			issue{version: "1", at: at, hours: 96, err: constErr(float64(i+1) / 100)},
			issue{version: "2", at: at, hours: 96, err: byDay, band: 0.1})
	}
	set, err := evaluate.Load(context.Background(), m, evaluate.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := evaluate.Score(context.Background(), set, m)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 2 {
		t.Fatalf("%d results, want 2", len(rep.Results))
	}
	return rep
}

func TestScoreMetrics(t *testing.T) {
	t.Parallel()
	rep := scored(t)
	v1, v2 := rep.Results[0], rep.Results[1]
	if v1.ModelVersion != "1" || v2.ModelVersion != "2" || v1.Scored != 10 || v1.Skipped != 0 {
		t.Fatalf("results %+v / %+v", v1.Key, v2.Key)
	}
	for _, c := range []struct {
		note   string
		r      evaluate.Result
		metric string
		want   float64
	}{
		{"mean of 1..10 %", v1, "mape_d1", 5.5},
		{"median of 1..10 %", v1, "mape_d1_median", 5.5},
		{"p90 interpolates between 9 and 10", v1, "mape_d1_p90", 9.1},
		{"same error every lead day", v1, "mape_d4", 5.5},
		{"MAE = error × the daily mean 100", v1, "mae_d1", 5.5},
		{"5 % on day 1", v2, "mape_d1", 5},
		{"20 % on day 4", v2, "mape_d4", 20},
		{"constant across issues", v2, "mape_d3_p90", 15},
		{"MAE day 2", v2, "mae_d2", 10},
		{"day 1 inside ±10 %", v2, "coverage_d1", 1},
		{"day 3 (15 %) outside", v2, "coverage_d3", 0},
		{"two of four days inside", v2, "coverage", 0.5},
	} {
		got, err := c.r.Metric(c.metric)
		if err != nil || !near(got, c.want) {
			t.Errorf("%s: %s = %v, %v; want %v", c.note, c.metric, got, err, c.want)
		}
	}
	if got, _ := v1.Metric("coverage"); !math.IsNaN(got) {
		t.Errorf("coverage without intervals = %v, want NaN", got)
	}
	if got := v2.ByLeadHour; len(got) != 96 || !near(got[0], 5) || !near(got[95], 20) {
		t.Errorf("by lead hour: len %d, first %v, last %v", len(got), got[0], got[len(got)-1])
	}
	if !v1.First.Equal(day0) || !v1.Last.Equal(day0.AddDate(0, 0, 9)) {
		t.Errorf("first %v last %v", v1.First, v1.Last)
	}
}

// TestScoreSkipsAndPartialDays: a missing observation skips the issue whose
// covered days include it; a 48-hour forecast scores days 1-2 only.
func TestScoreSkipsAndPartialDays(t *testing.T) {
	t.Parallel()
	m := fixture(t, 10)
	// Drop the observations of day0+3 by rewriting the store without them.
	gap := store.NewMemory()
	s, err := m.Observed(context.Background(), "DE", forecast.SignalDirect, day0, day0.AddDate(0, 0, 10))
	if err != nil {
		t.Fatal(err)
	}
	var obs []store.Observation
	for i, v := range s.Values {
		at := day0.Add(time.Duration(i) * time.Hour)
		if at.Equal(day0.AddDate(0, 0, 3).Add(5 * time.Hour)) {
			continue
		}
		obs = append(obs, store.Observation{Time: at, Value: v})
	}
	if err := gap.UpsertObserved(context.Background(), "DE", forecast.SignalDirect, obs); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		write(t, gap, "m", issue{version: "1", at: day0.AddDate(0, 0, i), hours: 48, err: constErr(0.02)})
	}
	set, err := evaluate.Load(context.Background(), gap, evaluate.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := evaluate.Score(context.Background(), set, gap)
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Results[0]
	// Issues of day0+2 (day 2 is day0+3) and day0+3 (day 1) are skipped.
	if r.Issues != 6 || r.Scored != 4 || r.Skipped != 2 {
		t.Fatalf("issues %d scored %d skipped %d, want 6/4/2", r.Issues, r.Scored, r.Skipped)
	}
	if r.Days[0].N != 4 || r.Days[1].N != 4 || r.Days[2].N != 0 {
		t.Fatalf("days scored %d %d %d, want 4 4 0", r.Days[0].N, r.Days[1].N, r.Days[2].N)
	}
	if got, _ := r.Metric("mape_d3"); !math.IsNaN(got) {
		t.Fatalf("mape_d3 = %v without a day-3 forecast, want NaN", got)
	}
}

func TestLoadSelection(t *testing.T) {
	t.Parallel()
	m := fixture(t, 10)
	for _, mv := range []struct{ model, version string }{
		{"carbon-forecaster-DE", "10"}, {"carbon-forecaster-DE", "2"}, {"carbon-forecaster-DE", "local"},
		{"carbon-forecaster-generic", "1"}, {"other", "1"},
	} {
		write(t, m, mv.model, issue{version: mv.version, at: day0, hours: 24, err: constErr(0.01)})
	}
	for _, c := range []struct {
		note string
		sel  evaluate.Selection
		want []string
	}{
		{"everything, numeric versions in order", evaluate.Selection{},
			[]string{"carbon-forecaster-DE/2", "carbon-forecaster-DE/10", "carbon-forecaster-DE/local", "carbon-forecaster-generic/1", "other/1"}},
		{"prefix", evaluate.Selection{ModelPrefix: "carbon-forecaster-"},
			[]string{"carbon-forecaster-DE/2", "carbon-forecaster-DE/10", "carbon-forecaster-DE/local", "carbon-forecaster-generic/1"}},
		{"exact name and versions", evaluate.Selection{Query: store.ForecastQuery{ModelName: "carbon-forecaster-DE"}, Versions: []string{"10", "local"}},
			[]string{"carbon-forecaster-DE/10", "carbon-forecaster-DE/local"}},
		{"one version is pushed down", evaluate.Selection{Versions: []string{"1"}},
			[]string{"carbon-forecaster-generic/1", "other/1"}},
		{"issue range excludes", evaluate.Selection{Query: store.ForecastQuery{IssuedFrom: day0.Add(time.Hour)}}, nil},
	} {
		t.Run(c.note, func(t *testing.T) {
			t.Parallel()
			set, err := evaluate.Load(context.Background(), m, c.sel)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, k := range set.Keys() {
				got = append(got, k.ModelName+"/"+k.ModelVersion)
			}
			if strings.Join(got, " ") != strings.Join(c.want, " ") {
				t.Fatalf("keys %q, want %q", got, c.want)
			}
		})
	}
	for _, bad := range []evaluate.Selection{{LeadDays: -1}, {LeadDays: 31}, {ModelPrefix: "a", Query: store.ForecastQuery{ModelName: "b"}}} {
		if _, err := evaluate.Load(context.Background(), m, bad); forecast.ErrorCode(err) != forecast.EINVALID || forecast.ErrorField(err) == "" {
			t.Errorf("Load(%+v) = %v, want EINVALID naming a field", bad, err)
		}
	}
}

func TestParseMetric(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"mape_d1", true}, {"mape_d4_p90", true}, {"mae_d2_median", true}, {"coverage", true},
		{"coverage_d3", true}, {"width", true}, {"mape_d5", false}, {"mape_d0", false},
		{"mape_1", false}, {"coverage_d1_p90", false}, {"rmse_d1", false}, {"mape_d1_p50", false}, {"", false},
	} {
		err := evaluate.ParseMetric(c.name, 4)
		if (err == nil) != c.ok {
			t.Errorf("ParseMetric(%q) = %v, want ok=%v", c.name, err, c.ok)
		}
		if err != nil && forecast.ErrorField(err) != "metric" {
			t.Errorf("ParseMetric(%q) names field %q", c.name, forecast.ErrorField(err))
		}
	}
	for _, n := range evaluate.MetricNames(4) {
		if err := evaluate.ParseMetric(n, 4); err != nil {
			t.Errorf("listed metric %s does not parse: %v", n, err)
		}
	}
}

func TestWriteJSONAndTable(t *testing.T) {
	t.Parallel()
	rep := scored(t)
	var a, b bytes.Buffer
	if err := evaluate.WriteJSON(&a, rep); err != nil {
		t.Fatal(err)
	}
	if err := evaluate.WriteJSON(&b, rep); err != nil || a.String() != b.String() {
		t.Fatalf("JSON is not deterministic (%v)", err)
	}
	var doc struct {
		LeadDays int `json:"lead_days"`
		Results  []struct {
			ModelVersion string              `json:"model_version"`
			Scored       int                 `json:"scored"`
			Metrics      map[string]*float64 `json:"metrics"`
			Hours        []*float64          `json:"mape_by_lead_hour"`
		} `json:"results"`
	}
	if err := json.Unmarshal(a.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	r1 := doc.Results[0]
	if doc.LeadDays != 4 || r1.ModelVersion != "1" || r1.Scored != 10 || len(r1.Hours) != 96 {
		t.Fatalf("JSON %+v", doc)
	}
	if v := r1.Metrics["mape_d1_p90"]; v == nil || !near(*v, 9.1) {
		t.Fatalf("mape_d1_p90 = %v", v)
	}
	if v, ok := r1.Metrics["coverage"]; !ok || v != nil {
		t.Fatalf("coverage without intervals = %v (present %v), want null", v, ok)
	}
	var tab bytes.Buffer
	if err := evaluate.WriteTable(&tab, rep); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(tab.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("table has %d lines:\n%s", len(lines), tab.String())
	}
	// Right-aligned numeric columns end at the same offset on every row.
	if len(lines[1]) != len(lines[2]) || len(lines[2]) != len(lines[3]) {
		t.Fatalf("rows are not aligned:\n%s", tab.String())
	}
	if !strings.Contains(lines[2], "5.50") || !strings.Contains(lines[3], " 50.0 ") {
		t.Fatalf("table rows:\n%s", tab.String())
	}
}

func TestSeriesFunc(t *testing.T) {
	t.Parallel()
	s := forecast.Series{Start: day0, Values: []float64{1, 2, 3}}
	f := evaluate.SeriesFunc(func(z forecast.Zone, sig forecast.Signal) (forecast.Series, bool) {
		return s, z == "DE" && sig == forecast.SignalDirect
	})
	got, err := f.Observed(context.Background(), "DE", forecast.SignalDirect, day0.Add(-time.Hour), day0.Add(3*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if !got.Start.Equal(day0.Add(-time.Hour)) || len(got.Values) != 4 || !math.IsNaN(got.Values[0]) || got.Values[3] != 3 {
		t.Fatalf("observed %v %v", got.Start, got.Values)
	}
	other, err := f.Observed(context.Background(), "FR", forecast.SignalDirect, day0, day0.Add(2*time.Hour))
	if err != nil || len(other.Values) != 2 || !math.IsNaN(other.Values[1]) {
		t.Fatalf("unknown zone: %v %v", other.Values, err)
	}
	if _, err := f.Observed(context.Background(), "DE", forecast.SignalDirect, day0, day0.Add(-time.Hour)); forecast.ErrorCode(err) != forecast.EINVALID {
		t.Fatalf("reversed range: %v", err)
	}
}
