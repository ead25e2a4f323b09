//go:build interop

// Package e2e runs carbongate the way it is deployed, as processes: three
// carbonserve zone servers and a generic one load their models from a real
// SeaweedFS (s3://), the gateway routes to them over gRPC and REST, and
// /v1/schedule answers with each zone's provenance — including while a zone
// server is killed under load. Run with `go test -tags interop ./test/e2e`
// (make test does).
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/test/services"
)

// Zones served by their own carbonserve; the generic server covers the rest.
var zones = []string{"DE", "SE", "US-CAL-CISO"}

// replayStart puts the gateway's clock 20 s before an hour boundary, so the
// forecast cache recomputes every zone during the test.
const replayStart = "2021-06-01T05:59:40Z"

type cluster struct {
	gateway string                    // base URL
	servers map[string]*services.Proc // zone or "generic" → carbonserve
	logs    *services.Proc
}

// startCluster trains lifecycle models for zones (and the generic model),
// uploads them to SeaweedFS, starts one carbonserve per zone plus the
// generic one from s3:// and the gateway with a routes file for them.
func startCluster(t *testing.T) *cluster {
	t.Helper()
	bin := services.GoBuild(t, "carbongate", "carbonserve", "carbonctl")
	models := filepath.Join(t.TempDir(), "models")
	services.Run(t, filepath.Join(bin, "carbonctl"), "train", "--data", "bundled", "--until", "2021-01-01T00:00:00Z",
		"--signal", "lifecycle", "--zones", strings.Join(zones, ","), "--out", models)

	w := services.StartWeed(t)
	bucket := w.Bucket(t)
	env := []string{"S3_ENDPOINT=" + w.Host, "S3_USE_HTTPS=0", "AWS_REGION=" + w.Region,
		"AWS_ACCESS_KEY_ID=" + w.AccessKey, "AWS_SECRET_ACCESS_KEY=" + w.SecretKey}

	c := &cluster{servers: map[string]*services.Proc{}}
	var routes strings.Builder
	for i, z := range append(append([]string{}, zones...), "generic") {
		upload(t, w, bucket, "lifecycle/"+z+"/", filepath.Join(models, "lifecycle", z))
		name := "carbon-forecaster-" + z
		var restURL, grpcAddr string
		c.servers[z] = services.StartBinary(t, services.Binary{
			Name: "carbonserve-" + z, Path: filepath.Join(bin, "carbonserve"), Env: env,
			ArgsFor: func() []string {
				hp, gp := services.FreePort(t), services.FreePort(t)
				restURL, grpcAddr = fmt.Sprintf("http://127.0.0.1:%d", hp), fmt.Sprintf("127.0.0.1:%d", gp)
				return []string{"--host", "127.0.0.1", "--http_port", strconv.Itoa(hp), "--grpc_port", strconv.Itoa(gp),
					"--model_dir", "s3://" + bucket + "/lifecycle/" + z, "--model_name", name,
					"--cache-dir", t.TempDir(), "--drain-delay", "0s", "--reload-interval", "0"}
			},
			Ready: func(ctx context.Context) error { return services.OIPReady(restURL, grpcAddr, name)(ctx) },
		})
		// Alternate protocols so both client paths run end to end.
		if i%2 == 0 {
			fmt.Fprintf(&routes, "- {zone: %s, protocol: grpc, url: %q, model: %s}\n", z, grpcAddr, name)
		} else {
			fmt.Fprintf(&routes, "- {zone: %s, protocol: rest, url: %q, model: %s}\n", z, restURL, name)
		}
	}
	routesFile := filepath.Join(t.TempDir(), "routes.yaml")
	if err := os.WriteFile(routesFile, []byte(routes.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	c.logs = services.StartBinary(t, services.Binary{
		Name: "carbongate", Path: filepath.Join(bin, "carbongate"),
		ArgsFor: func() []string {
			p := services.FreePort(t)
			c.gateway = fmt.Sprintf("http://127.0.0.1:%d", p)
			return []string{"--addr", fmt.Sprintf("127.0.0.1:%d", p), "--routes", routesFile,
				"--clock", "replay", "--replay-start", replayStart, "--drain-delay", "0s",
				"--access-log=false", "--upstream-timeout", "2s"}
		},
		Ready: func(ctx context.Context) error { return services.HTTPReady(c.gateway + "/readyz")(ctx) },
	})
	return c
}

func upload(t testing.TB, w *services.S3, bucket, prefix, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		w.PutObject(t, bucket, prefix+e.Name(), b)
	}
}

// provenance is the part of a schedule response the tests read.
type scheduleResponse struct {
	Decision struct {
		Zone string `json:"zone"`
	} `json:"decision"`
	Provenance map[string]struct {
		Model    string    `json:"model"`
		Version  string    `json:"version"`
		Source   string    `json:"source"`
		IssuedAt time.Time `json:"issued_at"`
		Reason   string    `json:"reason"`
	} `json:"provenance"`
	Clock struct {
		Now time.Time `json:"now"`
	} `json:"clock"`
}

var scheduleBody = []byte(`{"zones":["DE","SE","US-CAL-CISO","PL"],"duration":"PT3H","deadline":"2021-06-04T00:00:00Z"}`)

// schedule posts one request; err is non-nil for anything but a 200 with
// a decision.
func schedule(ctx context.Context, hc *http.Client, base string) (scheduleResponse, error) {
	var r scheduleResponse
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/schedule", bytes.NewReader(scheduleBody))
	if err != nil {
		return r, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return r, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return r, err
	}
	if resp.StatusCode != http.StatusOK {
		return r, fmt.Errorf("status %d: %s", resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return r, err
	}
	if r.Decision.Zone == "" {
		return r, fmt.Errorf("no decision: %s", body)
	}
	return r, nil
}

// TestSchedule: every routed zone is forecast by its own model server over
// OIP, a zone without a server by the remote generic model, and the
// decision names one of the candidates.
func TestSchedule(t *testing.T) {
	c := startCluster(t)
	hc := &http.Client{Timeout: 10 * time.Second}
	r, err := schedule(context.Background(), hc, c.gateway)
	if err != nil {
		t.Fatal(err)
	}
	for _, z := range zones {
		p := r.Provenance[z]
		if p.Source != "zone" || p.Model != "carbon-forecaster-"+z || p.Version == "" {
			t.Errorf("%s: provenance %+v, want source zone from carbon-forecaster-%s with a version", z, p, z)
		}
	}
	if p := r.Provenance["PL"]; p.Source != "generic" || p.Model != "carbon-forecaster-generic" {
		t.Errorf("PL: provenance %+v, want the remote generic model", p)
	}
	t.Logf("decision %s; provenance %+v", r.Decision.Zone, r.Provenance)
}
