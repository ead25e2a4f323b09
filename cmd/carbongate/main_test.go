package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/cmd/internal/cli/clitest"
	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/dataset/bundled"
	"github.com/carbongate/carbongate/models/workflow"
	"github.com/carbongate/carbongate/test/testsupport"
)

func TestMain(m *testing.M) {
	clitest.RunMain(main) // the CLI tests start this binary as the command
	os.Exit(testsupport.RunLeakChecked(m))
}

func startMain(t *testing.T, args ...string) (*Main, *testsupport.SyncBuffer) {
	t.Helper()
	m := NewMain()
	logs := &testsupport.SyncBuffer{}
	m.Stderr = logs
	if err := m.ParseFlags(append([]string{"--addr", "127.0.0.1:0"}, args...)); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	deadline := time.Now().Add(10 * time.Second)
	for !m.Ready() {
		if time.Now().After(deadline) {
			t.Fatal("not ready after 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return m, logs
}

func get(url string) (int, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

func TestScheduleWithTrainedModels(t *testing.T) {
	t.Parallel()
	tables, err := bundled.Load()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := workflow.Train(context.Background(), tables, dir, workflow.TrainConfig{
		Until: time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC), Zones: []forecast.Zone{"DE", "SE"},
		Signals: []forecast.Signal{forecast.SignalLifecycle}, NoGeneric: true,
	}); err != nil {
		t.Fatal(err)
	}
	m, logs := startMain(t, "--models", dir, "--drain-delay", "0s")
	body := `{"zones":["DE","SE","PL","ES"],"duration":"PT3H","deadline":"2021-06-03T00:00:00Z"}`
	resp, err := http.Post(m.URL()+"/v1/schedule", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Decision   struct{ Zone string } `json:"decision"`
		Provenance map[string]struct {
			Model, Source string
		} `json:"provenance"`
		Clock struct{ Mode string } `json:"clock"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || r.Decision.Zone == "" || r.Clock.Mode != "replay" {
		t.Fatalf("status=%d response=%+v", resp.StatusCode, r)
	}
	if p := r.Provenance["DE"]; p.Source != "zone" || p.Model != "carbon-forecaster-DE" {
		t.Fatalf("DE provenance=%+v, want the trained zone model", p)
	}
	if p := r.Provenance["PL"]; p.Source != "baseline" {
		t.Fatalf("PL provenance=%+v, want the baseline (no model trained)", p)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), `"route":"/v1/schedule"`) {
		t.Fatalf("no JSON access log for the request:\n%s", logs)
	}
}

func TestNoModelsDirWarns(t *testing.T) {
	t.Parallel()
	m, logs := startMain(t, "--drain-delay", "0s", "--clock", "system")
	if code, err := get(m.URL() + "/healthz"); err != nil || code != 200 {
		t.Fatalf("healthz: %d %v", code, err)
	}
	if !strings.Contains(logs.String(), "no --models directory") {
		t.Fatalf("no warning about the missing models directory:\n%s", logs)
	}
}

func TestDrain(t *testing.T) {
	t.Parallel()
	m, _ := startMain(t, "--drain-delay", "400ms", "--shutdown-timeout", "2s")
	url := m.URL()
	if code, _ := get(url + "/readyz"); code != 200 {
		t.Fatalf("readyz before drain: %d", code)
	}
	closed := make(chan error)
	go func() { closed <- m.Close() }()
	// During the drain delay readiness fails but requests are still served.
	deadline := time.Now().Add(300 * time.Millisecond)
	for {
		code, err := get(url + "/readyz")
		if err != nil {
			t.Fatalf("readyz during drain: %v", err)
		}
		if code == 503 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("readyz did not fail during the drain")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if code, err := get(url + "/healthz"); err != nil || code != 200 {
		t.Fatalf("healthz during drain: %d %v, want 200", code, err)
	}
	select {
	case err := <-closed:
		t.Fatalf("Close returned %v before the drain delay ended", err)
	default:
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if _, err := get(url + "/healthz"); err == nil {
		t.Fatal("server still serving after Close")
	}
}

func TestBindError(t *testing.T) {
	t.Parallel()
	m1, _ := startMain(t, "--drain-delay", "0s")
	m2 := NewMain()
	m2.Stderr = io.Discard
	m2.Addr = strings.TrimPrefix(m1.URL(), "http://")
	if err := m2.Run(context.Background()); err == nil {
		m2.Close()
		t.Fatal("Run on a used address succeeded, want the bind error")
	}
}

func TestParseFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		ok   bool
	}{
		{"defaults", nil, true},
		{"all", []string{"--addr", ":0", "--clock", "system", "--replay-start", "2021-03-01T00:00:00Z", "--step", "15m", "--horizon", "72h", "--log-level", "debug"}, true},
		{"bad time", []string{"--replay-start", "yesterday"}, false},
		{"bad level", []string{"--log-level", "loud"}, false},
		{"extra args", []string{"serve"}, false},
		{"routes", []string{"--routes", "routes.yaml", "--route-refresh", "10s", "--upstream-timeout", "300ms", "--breaker-failures", "2", "--breaker-cooldown", "5s"}, true},
		{"zero upstream timeout", []string{"--upstream-timeout", "0s"}, false},
		{"zero breaker failures", []string{"--breaker-failures", "0"}, false},
		{"negative route refresh", []string{"--route-refresh", "-1s"}, false},
		{"hold mode shadow", []string{"--controller", "--hold-mode", "shadow"}, true},
		{"bad hold mode", []string{"--controller", "--hold-mode", "dry-run"}, false},
		{"replay anchor", []string{"--replay-anchor", "2030-01-01T12:00:00.5Z", "--replay-speed", "5"}, true},
		{"bad replay anchor", []string{"--replay-anchor", "noon"}, false},
		{"replay anchor on the system clock", []string{"--clock", "system", "--replay-anchor", "2030-01-01T12:00:00Z"}, false},
		{"negative schedule-ahead", []string{"--controller", "--karmada-schedule-ahead", "-1s"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := NewMain()
			m.Stderr = io.Discard
			if err := m.ParseFlags(tt.args); (err == nil) != tt.ok {
				t.Fatalf("err=%v, want ok=%v", err, tt.ok)
			}
		})
	}
}
