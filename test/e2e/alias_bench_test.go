//go:build interop

package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/carbongate/carbongate/test/services"
	"github.com/carbongate/carbongate/test/testsupport"
)

// aliasRate hammers GET registered-models/alias on base with workers
// concurrent keep-alive clients for d and returns requests/s; any non-200
// fails the test.
func aliasRate(t testing.TB, base string, workers int, d time.Duration) float64 {
	t.Helper()
	url := base + "/api/2.0/mlflow/registered-models/alias?name=carbon-forecaster-DE&alias=champion"
	tr := &http.Transport{MaxIdleConnsPerHost: workers}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	var n, bad atomic.Int64
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	t0 := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				resp, err := hc.Get(url)
				if err != nil {
					bad.Add(1)
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					bad.Add(1)
					continue
				}
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	if bad.Load() > 0 {
		t.Fatalf("%s: %d failed requests", base, bad.Load())
	}
	return float64(n.Load()) / time.Since(t0).Seconds()
}

// BenchmarkAliasLookup (make bench, -benchtime 1x) measures GET registered-models/alias on
// carbongate and on a real MLflow server over the same PostgreSQL database,
// in the same run: MLflow with one worker (as the tests run it) and with
// its default configuration (4 workers). It prints the rates and ratios
// (goal: carbongate at least 10x either).
func BenchmarkAliasLookup(b *testing.B) {
	var t testing.TB = b
	bin := services.GoBuild(t, "carbongate", "carbonctl")
	w := services.StartWeed(t)
	bucket := w.Bucket(t)
	dbURL := services.StartPostgres(t).Database(t)
	mf := services.StartMLflow(t, services.MLflowOpts{BackendURI: dbURL, S3: w, Bucket: bucket, Prefix: "mlartifacts"})
	src, _ := trainDE(t, bin, w, bucket, "models/de", "2021-01-01T00:00:00Z")
	const name = "carbon-forecaster-DE"
	call(t, mf.URL, "POST", "registered-models/create", "", map[string]any{"name": name})
	call(t, mf.URL, "POST", "model-versions/create", "", map[string]any{"name": name, "source": src})
	call(t, mf.URL, "POST", "registered-models/alias", "", map[string]any{"name": name, "alias": "champion", "version": "1"})
	env := []string{"AWS_ENDPOINT_URL=" + w.Endpoint, "AWS_ACCESS_KEY_ID=" + w.AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + w.SecretKey, "AWS_REGION=" + w.Region}
	base := startGateway(t, bin, dbURL, env, "--artifact-sources", "s3://"+bucket)

	const workers, d = 16, 5 * time.Second
	aliasRate(t, mf.URL, workers, time.Second) // warm both
	aliasRate(t, base, workers, time.Second)
	mlflow := aliasRate(t, mf.URL, workers, d)
	ours := aliasRate(t, base, workers, d)
	mf.Kill() // the next server gets the cores
	mf4 := services.StartMLflow(t, services.MLflowOpts{BackendURI: dbURL, S3: w, Bucket: bucket, Prefix: "mlartifacts", DefaultWorkers: true})
	aliasRate(t, mf4.URL, workers, time.Second)
	mlflow4 := aliasRate(t, mf4.URL, workers, d)
	b.ReportMetric(ours, "carbongate-req/s")
	b.ReportMetric(mlflow, "mlflow-req/s")
	b.ReportMetric(mlflow4, "mlflow-default-req/s")
	fmt.Printf("GET registered-models/alias, %d concurrent clients, %v each, same PostgreSQL:\n", workers, d)
	fmt.Printf("  MLflow server 3.17.2, 1 worker:             %8.0f req/s\n", mlflow)
	fmt.Printf("  MLflow server 3.17.2, default (4 workers):  %8.0f req/s\n", mlflow4)
	fmt.Printf("  carbongate:                                 %8.0f req/s\n", ours)
	testsupport.Goal(t, ours >= 10*max(mlflow, mlflow4), "alias lookup throughput ratio carbongate/MLflow: %.1fx vs 1 worker, %.1fx vs its default 4 workers (goal >= 10x)", ours/mlflow, ours/mlflow4)
}
