//go:build interop

package main

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/models"
	"github.com/carbongate/carbongate/models/serve/servetest"
	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/mlflowclient"
	"github.com/carbongate/carbongate/registry/s3"
	"github.com/carbongate/carbongate/test/services"
)

// TestServeFromMLflowRegistry: carbonserve --model
// models:/carbon-forecaster-DE@champion against a real MLflow server
// (SQLite backend store, SeaweedFS artifacts) serves the version the
// alias points at, fetched from S3, with the registry version as its OIP
// version; when version 2 (an mlflow-artifacts:/ location) is registered
// and the alias moved, inference switches to it within 5 s without a
// failed request; when the registry goes away, version 2 keeps serving.
func TestServeFromMLflowRegistry(t *testing.T) {
	const name = "carbon-forecaster-DE"
	w := services.StartWeed(t)
	bucket := w.Bucket(t)
	// A SQLite backend store: the shared PostgreSQL outlives the tests,
	// which this package's leak check would report.
	mf := services.StartMLflow(t, services.MLflowOpts{
		BackendURI: "sqlite:///" + filepath.Join(t.TempDir(), "mlflow.db"), S3: w, Bucket: bucket, Prefix: "mlartifacts",
	})
	// The calls' deadline starts once the peers are up: their starts have
	// deadlines of their own, and took 2.5 minutes on a loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s3c, err := s3.NewClient(s3.Config{Endpoint: w.Endpoint, AccessKey: w.AccessKey, SecretKey: w.SecretKey, Region: w.Region})
	if err != nil {
		t.Fatal(err)
	}
	upload := func(m models.Model, uri string) {
		t.Helper()
		dir := filepath.Join(t.TempDir(), "model")
		servetest.Save(t, dir, m)
		if _, err := s3.Upload(ctx, s3c, dir, uri); err != nil {
			t.Fatal(err)
		}
	}
	reg, err := mlflowclient.New(mf.URL, mlflowclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })

	m1, m2 := servetest.Ridge(t, name, "DE", 0), servetest.Ridge(t, name, "DE", 4)
	upload(m1, "s3://"+bucket+"/models/DE/1/")
	if _, err := reg.CreateModel(ctx, name, "carbon intensity, DE", []registry.Tag{{Key: "zone", Value: "DE"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.CreateVersion(ctx, registry.NewVersion{Name: name, Source: "s3://" + bucket + "/models/DE/1"}); err != nil {
		t.Fatal(err)
	}
	if err := reg.SetAlias(ctx, name, registry.ChampionAlias, 1); err != nil {
		t.Fatal(err)
	}

	env := map[string]string{
		"MLFLOW_TRACKING_URI": mf.URL,
		"S3_ENDPOINT":         w.Host, "S3_USE_HTTPS": "0", "AWS_REGION": w.Region,
		"AWS_ACCESS_KEY_ID": w.AccessKey, "AWS_SECRET_ACCESS_KEY": w.SecretKey,
	}
	m, logs := startRegistryMain(t, func(k string) string { return env[k] }, nil,
		"--model", "models:/"+name+"@champion", "--artifacts-destination", mf.ArtifactsDestination,
		"--artifact-sources", "s3://"+bucket+"/models", "--cache-dir", t.TempDir(), "--registry-poll-interval", "200ms")
	c := clients(t, m)["rest"]
	_, h, starts := forecastRequest(2)
	v1 := served{"1", servetest.Want(t, m1, h, starts)}
	v2 := served{"2", servetest.Want(t, m2, h, starts)}
	req, _, _ := forecastRequest(2)
	resp, err := c.Infer(ctx, name, "", req)
	if err != nil || resp.ModelVersion != "1" || !slices.Equal(resp.Outputs[0].FP32, v1.want) {
		t.Fatalf("first answer %+v, %v; want version 1's forecast", resp, err)
	}

	// Version 2 is logged to a run, under MLflow's artifact root: its
	// source is mlflow-artifacts:/<experiment>/<run>/artifacts/model.
	runID, artifacts := createRun(t, mf.URL)
	src := artifacts + "/model"
	upload(m2, mf.ArtifactsDestination+"/"+strings.TrimPrefix(src, "mlflow-artifacts:/")+"/")
	if _, err := reg.CreateVersion(ctx, registry.NewVersion{Name: name, Source: src, RunID: runID}); err != nil {
		t.Fatal(err)
	}
	switchover(t, c, name, v1, v2, 5*time.Second, func() {
		if err := reg.SetAlias(ctx, name, registry.ChampionAlias, 2); err != nil {
			t.Fatal(err)
		}
	})

	mf.Kill()
	waitLog(t, logs, "cannot read registry aliases")
	resp, err = c.Infer(ctx, name, "", req)
	if err != nil || resp.ModelVersion != "2" || !slices.Equal(resp.Outputs[0].FP32, v2.want) {
		t.Fatalf("with the registry down: %+v, %v; want version 2's forecast", resp, err)
	}
}

// createRun creates a run in MLflow's default experiment and returns its
// id and artifact URI (mlflow-artifacts:/…).
func createRun(t *testing.T, baseURL string) (runID, artifactURI string) {
	t.Helper()
	body := strings.NewReader(`{"experiment_id": "0", "run_name": "train-DE"}`)
	resp, err := http.Post(baseURL+"/api/2.0/mlflow/runs/create", "application/json", body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Run struct {
			Info struct {
				RunID       string `json:"run_id"`
				ArtifactURI string `json:"artifact_uri"`
			} `json:"info"`
		} `json:"run"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
		t.Fatalf("runs/create: HTTP %d, %v", resp.StatusCode, err)
	}
	if !strings.HasPrefix(out.Run.Info.ArtifactURI, "mlflow-artifacts:/") {
		t.Fatalf("run artifact URI %q is not mlflow-artifacts:/", out.Run.Info.ArtifactURI)
	}
	return out.Run.Info.RunID, out.Run.Info.ArtifactURI
}
