//go:build interop

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/carbongate/carbongate/models/serve/servetest"
	"github.com/carbongate/carbongate/oip"
	"github.com/carbongate/carbongate/oip/rest"
	"github.com/carbongate/carbongate/test/services"
)

// ctl runs carbonctl with env and returns its stdout.
func ctl(t testing.TB, bin string, env []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "carbonctl"), args...)
	cmd.Env = append(cmd.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("carbonctl %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

func readyz(t *testing.T, base string) (int, string) {
	t.Helper()
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestPromotionUnderLoad: the registry on a real PostgreSQL (MLflow's
// tables, created by carbonctl registry migrate; aliases pushed by
// LISTEN/NOTIFY), see promotionUnderLoad.
func TestPromotionUnderLoad(t *testing.T) {
	pg := services.StartPrivatePostgres(t)
	promotionUnderLoad(t, promotionDB{uri: pg.Database(t), stop: pg.Stop, start: pg.Start})
}

// TestPromotionUnderLoadCrateDB: the same on a real CrateDB, which cannot
// notify: carbongate reads the alias table every --registry-poll.
func TestPromotionUnderLoadCrateDB(t *testing.T) {
	crate := services.StartPrivateCrateDB(t)
	promotionUnderLoad(t, promotionDB{uri: crateRegistryURI(crate.Schema(t)), stop: crate.Stop, start: crate.Start, afterRestart: 10 * time.Second})
}

// promotionDB is the registry database of promotionUnderLoad: its
// --registry URI and how to stop it and start it again.
type promotionDB struct {
	uri         string
	stop, start func(testing.TB)
	// afterRestart bounds the promotion made once the database is back
	// (0: the 2 s of any promotion). CrateDB's first reads after a restart
	// can stall while its shards recover (up to the gateway's 4 s request
	// timeout, then carbonserve's next poll).
	afterRestart time.Duration
}

// promotionUnderLoad: artifacts in SeaweedFS, the registry in db.
// carbonctl registers three DE versions (the third with the first one's
// files) and promotes v1; the gateway serves it, and carbonserve --model
// models:/carbon-forecaster-DE@champion follows it through the gateway's
// MLflow API. Under 200 schedule requests/s to the gateway and 200
// inference requests/s to carbonserve, `carbonctl promote --version 2`
// (another process) switches DE to v2; then the database is stopped
// mid-flight (the gateway keeps serving v2 and /readyz says the registry
// is unreachable) and started again (/readyz recovers), and `carbonctl
// promote --version 3` switches to v3. No request fails, every answer is
// labelled with a version that never goes back, and each promotion is
// answered by both servers within 2 s of the promote command's exit (the
// one right after the restart within db.afterRestart; the delays are
// printed).
func promotionUnderLoad(t *testing.T, db promotionDB) {
	const name = "carbon-forecaster-DE"
	bin := services.GoBuild(t, "carbongate", "carbonctl", "carbonserve")
	w := services.StartWeed(t)
	bucket := w.Bucket(t)
	env := []string{"AWS_ENDPOINT_URL=" + w.Endpoint, "AWS_ACCESS_KEY_ID=" + w.AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + w.SecretKey, "AWS_REGION=" + w.Region}

	models := t.TempDir()
	for i, until := range []string{"2021-01-01T00:00:00Z", "2020-10-01T00:00:00Z"} {
		ctl(t, bin, env, "train", "--data", "bundled", "--until", until, "--signal", "lifecycle", "--zones", "DE",
			"--out", filepath.Join(models, fmt.Sprint(i+1)))
	}
	ctl(t, bin, env, "registry", "migrate", "--registry", db.uri)
	for i, dir := range []string{"1", "2", "1"} {
		args := []string{"register", "--registry", db.uri, "--zone", "DE", "--artifacts", "s3://" + bucket + "/registry",
			"--model-dir", filepath.Join(models, dir, "lifecycle", "DE")}
		if i == 0 {
			args = append(args, "--alias", "champion")
		}
		out := ctl(t, bin, env, args...)
		if !strings.Contains(out, fmt.Sprintf(`"version":"%d"`, i+1)) || !strings.Contains(out, `"source":"s3://`+bucket) {
			t.Fatalf("register: %s", out)
		}
	}

	var base string
	services.StartBinary(t, services.Binary{
		Name: "carbongate", Path: filepath.Join(bin, "carbongate"), Env: env,
		ArgsFor: func() []string {
			p := services.FreePort(t)
			base = fmt.Sprintf("http://127.0.0.1:%d", p)
			return []string{"--addr", fmt.Sprintf("127.0.0.1:%d", p), "--registry", db.uri, "--registry-poll", "500ms",
				"--registry-cache-dir", t.TempDir(), "--drain-delay", "0s", "--access-log=false",
				"--artifact-sources", "s3://" + bucket + "/registry"}
		},
		Ready: func(ctx context.Context) error { return services.HTTPReady(base + "/readyz")(ctx) },
	})
	var restURL string
	services.StartBinary(t, services.Binary{
		Name: "carbonserve", Path: filepath.Join(bin, "carbonserve"),
		Env: append([]string{"S3_ENDPOINT=" + w.Host, "S3_USE_HTTPS=0"}, env...),
		ArgsFor: func() []string {
			hp, gp := services.FreePort(t), services.FreePort(t)
			restURL = fmt.Sprintf("http://127.0.0.1:%d", hp)
			return []string{"--host", "127.0.0.1", "--http_port", fmt.Sprint(hp), "--grpc_port", fmt.Sprint(gp),
				"--model", "models:/" + name + "@champion", "--registry-uri", base, "--registry-poll-interval", "500ms",
				"--artifact-sources", "s3://" + bucket + "/registry", "--cache-dir", t.TempDir(), "--drain-delay", "0s"}
		},
		Ready: func(ctx context.Context) error { return services.OIPReady(restURL, "", name)(ctx) },
	})
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	t.Cleanup(hc.CloseIdleConnections)
	waitVersion(t, hc, base, "1", 10*time.Second)
	infer := inferer(t, restURL, name)

	var (
		promotedAt = map[string]time.Time{} // version → when carbonctl promote returned
		stop       atomic.Bool
	)
	gateDone, serveDone := make(chan []versioned, 1), make(chan []versioned, 1)
	go func() {
		var out []versioned
		for _, r := range openLoop(hc, base, 200, stop.Load) {
			out = append(out, versioned{at: r.at, latency: r.latency, version: r.resp.Provenance["DE"].Version, err: r.err})
		}
		gateDone <- out
	}()
	go func() {
		serveDone <- openLoopFunc(200, stop.Load, func(ctx context.Context) versioned {
			t0 := time.Now()
			v, err := infer(ctx)
			return versioned{at: t0, latency: time.Since(t0), version: v, err: err}
		})
	}()
	promote := func(from, version string) {
		t.Helper()
		out := ctl(t, bin, env, "promote", "--registry", db.uri, "--zone", "DE", "--version", version)
		promotedAt[version] = time.Now()
		if !strings.Contains(out, name+"@champion: version "+from+" -> "+version) {
			t.Fatalf("promote: %s", out)
		}
	}
	time.Sleep(2 * time.Second)
	promote("1", "2")
	time.Sleep(4 * time.Second)

	// Database down mid-flight: v2 keeps serving; readyz says so.
	down := time.Now()
	db.stop(t)
	waitReadyz(t, base, "registry unreachable", 15*time.Second)
	time.Sleep(2 * time.Second)
	restart := time.Now()
	db.start(t)
	waitReadyz(t, base, "ok: 1 models from the registry", 30*time.Second)
	t.Logf("database down for %v (its restart took %v)", time.Since(down).Round(time.Millisecond), time.Since(restart).Round(time.Millisecond))
	promote("2", "3")
	bounds := map[string]time.Duration{"2": 2 * time.Second, "3": max(2*time.Second, db.afterRestart)}
	time.Sleep(bounds["3"] + 2*time.Second)
	stop.Store(true)

	for _, s := range []struct {
		server  string
		results []versioned
	}{{"carbongate", <-gateDone}, {"carbonserve", <-serveDone}} {
		checkPromotions(t, s.server, s.results, promotedAt, bounds)
	}
}

// versioned is one request of the load: when it was sent, how long it
// took, and the DE version that answered it.
type versioned struct {
	at      time.Time
	latency time.Duration
	version string
	err     error
}

// inferer returns a function that sends one forecast request of the
// model's shape to the carbonserve at restURL and returns the answering
// model version.
func inferer(t *testing.T, restURL, model string) func(context.Context) (string, error) {
	t.Helper()
	c, err := rest.NewClient(restURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	md, err := c.ModelMetadata(context.Background(), model, "")
	if err != nil {
		t.Fatal(err)
	}
	hist, ok := md.Input(oip.InputHistory)
	if !ok || len(hist.Shape) != 2 {
		t.Fatalf("model metadata: no %s input of two dimensions: %+v", oip.InputHistory, md)
	}
	h, st := servetest.InputL(1, int(hist.Shape[1]))
	req := &oip.InferenceRequest{ID: "promotion", Inputs: []oip.Tensor{
		{Name: oip.InputHistory, Datatype: oip.FP32, Shape: []int64{1, hist.Shape[1]}, FP32: h},
		{Name: oip.InputStart, Datatype: oip.INT64, Shape: []int64{1, 1}, INT64: st},
	}}
	return func(ctx context.Context) (string, error) {
		resp, err := c.Infer(ctx, model, "", req)
		if err != nil {
			return "", err
		}
		return resp.ModelVersion, nil
	}
}

// checkPromotions checks one server's answers: none failed, versions
// never went back, and each promoted version was answered within its
// bound of its promotion (from carbonctl promote's exit to the end of the
// first request that version answered).
func checkPromotions(t *testing.T, server string, results []versioned, promotedAt map[string]time.Time, bounds map[string]time.Duration) {
	t.Helper()
	first := map[string]time.Time{} // version → end of its first answer
	var failed int
	for _, r := range results {
		if r.err != nil {
			if failed++; failed <= 5 {
				t.Errorf("%s: request sent at %s failed: %v", server, r.at.Format(time.StampMilli), r.err)
			}
			continue
		}
		if _, known := promotedAt[r.version]; !known && r.version != "1" {
			t.Fatalf("%s: DE version %q", server, r.version)
		}
		if end := r.at.Add(r.latency); first[r.version].IsZero() || end.Before(first[r.version]) {
			first[r.version] = end
		}
	}
	// Once a version answered, no request sent later may get an older one.
	for _, r := range results {
		for v, at := range first {
			if r.err == nil && r.version < v && r.at.After(at) {
				t.Errorf("%s: a request sent %v after the first v%s answer got v%s", server, r.at.Sub(at), v, r.version)
				return
			}
		}
	}
	var delays []string
	for _, v := range slices.Sorted(maps.Keys(promotedAt)) {
		if first[v].IsZero() {
			t.Errorf("%s: v%s never answered in %d requests", server, v, len(results))
			continue
		}
		delay := first[v].Sub(promotedAt[v])
		delays = append(delays, fmt.Sprintf("v%s after %v", v, delay.Round(time.Millisecond)))
		if delay > bounds[v] {
			t.Errorf("%s: promotion to v%s took %v to show, want < %v", server, v, delay, bounds[v])
		}
	}
	t.Logf("%s: promotions visible: %s (from carbonctl promote's exit to the first answer); %d requests, %d failed",
		server, strings.Join(delays, ", "), len(results), failed)
}

// waitReadyz waits until the gateway's /readyz answers 200 with want in
// its body.
func waitReadyz(t *testing.T, base, want string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		code, body := readyz(t, base)
		if code == 200 && strings.Contains(body, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("readyz %d %s after %v: want 200 with %q", code, body, within, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitVersion polls until DE is served by version want of its registered
// model.
func waitVersion(t *testing.T, hc *http.Client, base, want string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		r, err := schedule(context.Background(), hc, base)
		if err != nil {
			t.Fatal(err)
		}
		p := r.Provenance["DE"]
		if p.Source == "zone" && p.Version == want {
			return
		}
		if time.Now().After(deadline) {
			b, _ := json.Marshal(p)
			t.Fatalf("DE provenance %s, want version %s", b, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
