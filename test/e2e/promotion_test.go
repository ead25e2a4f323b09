//go:build interop

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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
// tables, created by carbonctl registry migrate) with artifacts in
// SeaweedFS. carbonctl registers two DE versions and promotes v1; the
// gateway serves it. Under 200 schedule requests/s, `carbonctl promote
// --version 2` (another process) switches DE to v2: no request fails,
// every response is labelled v1 or v2 and never goes back, and the delay
// from the promote command's exit to the first v2 answer is printed (goal:
// under 2 s). Then the database is stopped mid-flight: the gateway keeps
// serving v2 and /readyz says the registry is unreachable; it recovers
// when the database is back.
func TestPromotionUnderLoad(t *testing.T) {
	bin := services.GoBuild(t, "carbongate", "carbonctl")
	pg := services.StartPrivatePostgres(t)
	dbURL := pg.Database(t)
	w := services.StartWeed(t)
	bucket := w.Bucket(t)
	env := []string{"AWS_ENDPOINT_URL=" + w.Endpoint, "AWS_ACCESS_KEY_ID=" + w.AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + w.SecretKey, "AWS_REGION=" + w.Region}

	models := t.TempDir()
	for i, until := range []string{"2021-01-01T00:00:00Z", "2020-10-01T00:00:00Z"} {
		ctl(t, bin, env, "train", "--data", "bundled", "--until", until, "--signal", "lifecycle", "--zones", "DE",
			"--out", filepath.Join(models, fmt.Sprint(i+1)))
	}
	ctl(t, bin, env, "registry", "migrate", "--registry", dbURL)
	for i, alias := range []string{"champion", ""} {
		args := []string{"register", "--registry", dbURL, "--zone", "DE", "--artifacts", "s3://" + bucket + "/registry",
			"--model-dir", filepath.Join(models, fmt.Sprint(i+1), "lifecycle", "DE")}
		if alias != "" {
			args = append(args, "--alias", alias)
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
			return []string{"--addr", fmt.Sprintf("127.0.0.1:%d", p), "--registry", dbURL, "--registry-poll", "500ms",
				"--registry-cache-dir", t.TempDir(), "--drain-delay", "0s", "--access-log=false",
				"--artifact-sources", "s3://" + bucket + "/registry"}
		},
		Ready: func(ctx context.Context) error { return services.HTTPReady(base + "/readyz")(ctx) },
	})
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	t.Cleanup(hc.CloseIdleConnections)
	waitVersion(t, hc, base, "1", 10*time.Second)

	var (
		promotedAt atomic.Int64 // unix nanos when carbonctl promote returned
		firstV2    time.Time
		stop       atomic.Bool
	)
	loadDone := make(chan []result, 1)
	go func() {
		loadDone <- openLoop(hc, base, 200, func() bool { return stop.Load() })
	}()
	time.Sleep(2 * time.Second)
	out := ctl(t, bin, env, "promote", "--registry", dbURL, "--zone", "DE", "--version", "2")
	promotedAt.Store(time.Now().UnixNano())
	if !strings.Contains(out, "carbon-forecaster-DE@champion: version 1 -> 2") {
		t.Fatalf("promote: %s", out)
	}
	time.Sleep(4 * time.Second)
	stop.Store(true)
	results := <-loadDone

	var failed int
	for _, res := range results {
		switch v := res.resp.Provenance["DE"].Version; {
		case res.err != nil:
			failed++
		case v != "1" && v != "2":
			t.Fatalf("DE version %q: %+v", v, res.resp.Provenance["DE"])
		case v == "2":
			if end := res.at.Add(res.latency); firstV2.IsZero() || end.Before(firstV2) {
				firstV2 = end
			}
		}
	}
	// Once a response said v2, no request sent later may say v1.
	for _, res := range results {
		if res.err == nil && res.resp.Provenance["DE"].Version == "1" && !firstV2.IsZero() && res.at.After(firstV2) {
			t.Errorf("a request sent %v after the first v2 answer got v1", res.at.Sub(firstV2))
		}
	}
	if failed > 0 {
		t.Fatalf("%d of %d requests failed during the promotion", failed, len(results))
	}
	if firstV2.IsZero() {
		t.Fatalf("v2 never served in %d requests", len(results))
	}
	delay := firstV2.Sub(time.Unix(0, promotedAt.Load()))
	t.Logf("promotion visible after %v (from carbonctl promote's exit to the first v2 response); %d requests, 0 failed", delay.Round(time.Millisecond), len(results))
	if delay > 2*time.Second {
		t.Errorf("promotion took %v to show, want < 2s", delay)
	}

	// Database down mid-flight: v2 keeps serving; readyz says so.
	pg.Stop(t)
	deadline := time.Now().Add(15 * time.Second)
	for {
		code, body := readyz(t, base)
		if code == 200 && strings.Contains(body, "registry unreachable") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("readyz %d %s: want 200 noting the unreachable registry", code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	waitVersion(t, hc, base, "2", time.Second)
	pg.Start(t)
	deadline = time.Now().Add(20 * time.Second)
	for {
		code, body := readyz(t, base)
		if code == 200 && strings.Contains(body, "ok: 1 models from the registry") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("readyz %d %s after the database came back", code, body)
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
