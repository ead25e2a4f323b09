//go:build interop

package notebooks

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/oip"
	"github.com/carbongate/carbongate/oip/rest"
	"github.com/carbongate/carbongate/test/services"
)

// trainSummary is 02_train_python_model's summary.json.
type trainSummary struct {
	Zone      string             `json:"zone"`
	Signal    string             `json:"signal"`
	ModelName string             `json:"model_name"`
	Version   string             `json:"version"`
	Alias     string             `json:"alias"`
	RunID     string             `json:"run_id"`
	Lookback  int                `json:"lookback"`
	Horizon   int                `json:"horizon"`
	Metrics   map[string]float64 `json:"metrics"`
	Params    map[string]string  `json:"params"`
	Sample    struct {
		StartUnix int64     `json:"start_unix"`
		Forecast  []float64 `json:"forecast"`
	} `json:"sample"`
}

const (
	zone                 = "DE"
	evalFrom, evalTo     = "2021-01-01", "2021-06-27"
	nominalCoverage      = 0.9
	coverageTolerance    = 0.1 // |coverage − nominal| allowed on 2021-H1
	lookback, horizon    = 168, 96
	modelName            = "carbon-forecaster-" + zone
	replayStart          = "2021-03-01T05:00:00Z"
	alias                = "champion"
	trainFrom, trainTo   = "2020-01-01", "2020-12-31"
	calibrationDays      = "60"
	signal               = forecast.SignalLifecycle
	persistencePrecision = 1e-9
)

// TestTrainServe runs 02_train_python_model against a real MLflow server
// (SQLite backend store, SeaweedFS artifacts), checks the run and the
// registry through MLflow's REST API, serves the champion with MLServer's
// mlflow runtime, validates its OIP metadata with the gateway's own
// contract check, and has carbongate answer /v1/forecast for the zone
// through that server: provenance names the model and version, and the
// values are the model's.
func TestTrainServe(t *testing.T) {
	t.Parallel()
	bin := services.GoBuild(t, "carbongate")
	w := services.StartWeed(t)
	mf := services.StartMLflow(t, services.MLflowOpts{
		BackendURI: "sqlite:///" + filepath.Join(t.TempDir(), "mlflow.db"), S3: w, Bucket: w.Bucket(t), Prefix: "mlartifacts",
	})
	data := dataDir(t)
	out := t.TempDir()
	services.RunNotebook(t, "02_train_python_model.ipynb", map[string]string{
		"data_dir": data, "zone": zone, "signal": string(signal),
		"train_from": trainFrom, "train_to": trainTo, "calibration_days": calibrationDays,
		"eval_from": evalFrom, "eval_to": evalTo, "lookback": strconv.Itoa(lookback), "horizon": strconv.Itoa(horizon),
		"coverage": fmt.Sprint(nominalCoverage), "mlflow_tracking_uri": mf.URL, "experiment": "notebooks-test",
		"alias": alias, "output_dir": out,
	}, nil)
	var s trainSummary
	readJSON(t, filepath.Join(out, "summary.json"), &s)
	tab := loadZone(t, data, zone)
	y := tab.Series(signal)
	checkTrainSummary(t, s, y)
	checkMLflow(t, mf.URL, s)

	srv := services.StartMLServerMLflow(t, mf.URL, modelName, alias)
	if srv.Version != s.Version {
		t.Fatalf("MLServer serves version %s, the notebook registered %s", srv.Version, s.Version)
	}
	c, err := rest.NewClient(srv.RESTURL, rest.WithTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	checkMetadata(t, c)
	got := infer(t, c, y, time.Unix(s.Sample.StartUnix, 0).UTC())
	if len(got) != len(s.Sample.Forecast) {
		t.Fatalf("MLServer forecast %d hours, the notebook's %d", len(got), len(s.Sample.Forecast))
	}
	for i := range got {
		if !nearFP32(got[i], s.Sample.Forecast[i]) {
			t.Fatalf("MLServer forecast hour %d = %v, the notebook's model said %v", i, got[i], s.Sample.Forecast[i])
		}
	}

	base := startGateway(t, bin, srv.RESTURL)
	checkGatewayForecast(t, base, c, y, s.Version)
}

// checkTrainSummary checks the notebook's own report: shapes, the
// persistence baseline recomputed here, a model that beats it on day 1 and
// an interval whose coverage is near its nominal level.
func checkTrainSummary(t *testing.T, s trainSummary, y forecast.Series) {
	t.Helper()
	if s.ModelName != modelName || s.Version == "" || s.Alias != alias || s.RunID == "" || s.Lookback != lookback || s.Horizon != horizon {
		t.Fatalf("summary: %+v", s)
	}
	persistence := naiveMAPE(t, y, issueDays(t, evalFrom, evalTo), horizon/24, 0)
	for d, want := range persistence {
		got, ok := s.Metrics[fmt.Sprintf("persistence_mape_d%d", d+1)]
		if !ok || math.Abs(got-want) > persistencePrecision*want {
			t.Errorf("persistence MAPE lead day %d = %v, recomputed %v", d+1, got, want)
		}
	}
	if d1 := s.Metrics["mape_d1"]; !(d1 > 0 && d1 < persistence[0]) {
		t.Errorf("model day-1 MAPE %v, persistence %v: the model must beat persistence", d1, persistence[0])
	}
	if cov := s.Metrics["coverage"]; math.Abs(cov-nominalCoverage) > coverageTolerance {
		t.Errorf("interval coverage %v on validation, nominal %v", cov, nominalCoverage)
	}
	t.Logf("%s on %s..%s: MAPE d1-d4 %.2f %.2f %.2f %.2f (persistence %.2f %.2f %.2f %.2f), coverage %.3f",
		modelName, evalFrom, evalTo, s.Metrics["mape_d1"], s.Metrics["mape_d2"], s.Metrics["mape_d3"], s.Metrics["mape_d4"],
		persistence[0], persistence[1], persistence[2], persistence[3], s.Metrics["coverage"])
}

// checkMetadata validates the served model's OIP metadata the way the
// gateway does and wants the interval outputs declared too.
func checkMetadata(t *testing.T, c *rest.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	md, err := c.ModelMetadata(ctx, modelName, "")
	if err != nil {
		t.Fatal(err)
	}
	ct, err := oip.ContractOf(md)
	if err != nil {
		t.Fatalf("MLServer's metadata: %v\n%+v", err, md)
	}
	if ct != (oip.Contract{Lookback: lookback, Horizon: horizon}) {
		t.Fatalf("contract %+v, want L=%d H=%d", ct, lookback, horizon)
	}
	for _, name := range []string{oip.OutputLower, oip.OutputUpper} {
		if _, ok := md.Output(name); !ok {
			t.Errorf("metadata declares no output %q", name)
		}
	}
}

// infer asks the model for the forecast issued at start from the observed
// history before it.
func infer(t *testing.T, c *rest.Client, y forecast.Series, start time.Time) []float64 {
	t.Helper()
	hist, ok := y.Last(start, lookback)
	if !ok {
		t.Fatalf("no %d hours of history before %s", lookback, start)
	}
	req, err := oip.NewForecastRequest("notebooks-test", [][]float64{hist}, []time.Time{start})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := c.Infer(ctx, modelName, "", req)
	if err != nil {
		t.Fatal(err)
	}
	rows, lower, upper, err := oip.ParseForecastResponse(resp, 1, oip.Contract{Lookback: lookback, Horizon: horizon})
	if err != nil {
		t.Fatal(err)
	}
	if lower == nil || upper == nil {
		t.Error("MLServer returned no interval")
	}
	return rows[0]
}

// nearFP32 reports whether a and b agree to FP32 precision.
func nearFP32(a, b float64) bool {
	return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b))
}
