//go:build interop

package notebooks

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"
)

type keyValue struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
}

// values maps keys to their values as text (metrics are JSON numbers,
// params and tags JSON strings).
func values(kvs []keyValue) map[string]string {
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		var s string
		if json.Unmarshal(kv.Value, &s) != nil {
			s = string(kv.Value)
		}
		out[kv.Key] = s
	}
	return out
}

// checkMLflow reads the notebook's run and the champion version back
// through MLflow's REST API: the run finished with the summary's metrics
// and params, and the alias points at the summary's version, which
// carries the contract's tags and came from that run.
func checkMLflow(t *testing.T, base string, s trainSummary) {
	t.Helper()
	var run struct {
		Run struct {
			Info struct {
				Status string `json:"status"`
			} `json:"info"`
			Data struct {
				Metrics []keyValue `json:"metrics"`
				Params  []keyValue `json:"params"`
			} `json:"data"`
		} `json:"run"`
	}
	mlflowGet(t, base, "runs/get", url.Values{"run_id": {s.RunID}}, &run)
	if run.Run.Info.Status != "FINISHED" {
		t.Errorf("run %s status %q, want FINISHED", s.RunID, run.Run.Info.Status)
	}
	metrics := values(run.Run.Data.Metrics)
	for key, want := range s.Metrics {
		got, err := strconv.ParseFloat(metrics[key], 64)
		if err != nil || !nearFP32(got, want) {
			t.Errorf("MLflow metric %s = %q, summary %v", key, metrics[key], want)
		}
	}
	params := values(run.Run.Data.Params)
	for key, want := range s.Params {
		if params[key] != want {
			t.Errorf("MLflow param %s = %q, summary %q", key, params[key], want)
		}
	}

	var mv struct {
		ModelVersion struct {
			Version string     `json:"version"`
			RunID   string     `json:"run_id"`
			Status  string     `json:"status"`
			Tags    []keyValue `json:"tags"`
		} `json:"model_version"`
	}
	mlflowGet(t, base, "registered-models/alias", url.Values{"name": {modelName}, "alias": {alias}}, &mv)
	v := mv.ModelVersion
	if v.Version != s.Version || v.RunID != s.RunID || v.Status != "READY" {
		t.Errorf("%s@%s: version %s from run %s (%s), want version %s from run %s, READY", modelName, alias, v.Version, v.RunID, v.Status, s.Version, s.RunID)
	}
	tags := values(v.Tags)
	for key, want := range map[string]string{"zone": zone, "signal": string(signal), "lookback": strconv.Itoa(lookback), "horizon": strconv.Itoa(horizon)} {
		if tags[key] != want {
			t.Errorf("version tag %s = %q, want %q", key, tags[key], want)
		}
	}
}

// mlflowGet GETs /api/2.0/mlflow/<path>?<q> and decodes the 200 answer.
func mlflowGet(t *testing.T, base, path string, q url.Values, v any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	body, status, err := get(ctx, base+"/api/2.0/mlflow/"+path+"?"+q.Encode())
	if err != nil || status != http.StatusOK {
		t.Fatalf("GET %s: %d %v %s", path, status, err, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v: %s", path, err, body)
	}
}

// get returns the body and status of GET u.
func get(ctx context.Context, u string) ([]byte, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, err
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, resp.StatusCode, fmt.Errorf("read body: %w", err)
	}
	return body, resp.StatusCode, nil
}
