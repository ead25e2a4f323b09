//go:build interop

package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/test/services"
)

// startGateway starts carbongate on the registry at dbURL.
func startGateway(t testing.TB, bin, dbURL string, env []string, args ...string) string {
	t.Helper()
	var base string
	services.StartBinary(t, services.Binary{
		Name: "carbongate", Path: filepath.Join(bin, "carbongate"), Env: env,
		ArgsFor: func() []string {
			p := services.FreePort(t)
			base = fmt.Sprintf("http://127.0.0.1:%d", p)
			return append([]string{"--addr", fmt.Sprintf("127.0.0.1:%d", p), "--registry", dbURL, "--registry-poll", "500ms",
				"--registry-cache-dir", t.TempDir(), "--drain-delay", "0s", "--access-log=false"}, args...)
		},
		Ready: func(ctx context.Context) error { return services.HTTPReady(base + "/readyz")(ctx) },
	})
	return base
}

// trainDE trains one lifecycle DE model directory and uploads it to
// s3://bucket/prefix; it returns the S3 URI and the local directory.
func trainDE(t testing.TB, bin string, w *services.S3, bucket, prefix, until string) (string, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "models")
	ctl(t, bin, nil, "train", "--data", "bundled", "--until", until, "--signal", "lifecycle", "--zones", "DE", "--out", out)
	dir := filepath.Join(out, "lifecycle", "DE")
	upload(t, w, bucket, prefix+"/", dir)
	return "s3://" + bucket + "/" + prefix, dir
}

// call sends a JSON request to an MLflow-compatible server.
func call(t testing.TB, base, method, path, token string, body any) map[string]any {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, base+"/api/2.0/mlflow/"+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s %s: %v: %s", method, path, err, b)
	}
	return v
}

var failLine = regexp.MustCompile(`(?m)^FAIL ([^:]+)`)

// TestMLflowClientAgainstCarbongate runs MLflow's own Python client
// (test/python/check_mlflow_client.py: models, versions, tags, stages,
// aliases, search and paging, errors, models:/ downloads from SeaweedFS)
// against carbongate's registry API on PostgreSQL, with a write token.
func TestMLflowClientAgainstCarbongate(t *testing.T) {
	mlflowClientAgainstCarbongate(t, services.StartPostgres(t).Database(t))
}

// TestMLflowClientAgainstCarbongateCrateDB runs the same checks against
// carbongate's registry on CrateDB.
func TestMLflowClientAgainstCarbongateCrateDB(t *testing.T) {
	mlflowClientAgainstCarbongate(t, crateRegistryURI(services.StartCrateDB(t).Schema(t)))
}

// mlflowClientAgainstCarbongate runs check_mlflow_client.py against
// carbongate on the registry at dbURL, which it migrates first.
func mlflowClientAgainstCarbongate(t *testing.T, dbURL string) {
	bin := services.GoBuild(t, "carbongate", "carbonctl")
	w := services.StartWeed(t)
	bucket := w.Bucket(t)
	ctl(t, bin, nil, "registry", "migrate", "--registry", dbURL)
	src, dir := trainDE(t, bin, w, bucket, "models/de", "2021-01-01T00:00:00Z")
	args := []string{"--source", src, "--token", "e2e-token", "--expect-auth"}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		args = append(args, "--expect-file", e.Name()+"="+hex.EncodeToString(sum[:]))
	}
	base := startGateway(t, bin, dbURL, nil, "--registry-token", "e2e-token", "--artifact-sources", "s3://"+bucket)
	report, code := services.RunMLflowClient(t, base, services.AWSEnv(w), args...)
	if code != 0 || failLine.MatchString(report) {
		t.Fatalf("check_mlflow_client.py against carbongate: exit %d\n%s", code, report)
	}
	t.Logf("MLflow client against carbongate:\n%s", report)
}

// TestSharedDatabaseWithMLflow: a real MLflow server and carbongate share
// one PostgreSQL database (MLflow creates its schema). Versions MLflow
// registers are served by carbongate; versions carbongate registers and
// the alias it moves are visible through MLflow's own API.
func TestSharedDatabaseWithMLflow(t *testing.T) {
	bin := services.GoBuild(t, "carbongate", "carbonctl")
	w := services.StartWeed(t)
	bucket := w.Bucket(t)
	dbURL := services.StartPostgres(t).Database(t)
	mf := services.StartMLflow(t, services.MLflowOpts{BackendURI: dbURL, S3: w, Bucket: bucket, Prefix: "mlartifacts"})
	src1, _ := trainDE(t, bin, w, bucket, "models/de-1", "2021-01-01T00:00:00Z")
	src2, _ := trainDE(t, bin, w, bucket, "models/de-2", "2020-10-01T00:00:00Z")

	// MLflow writes version 1 and points champion at it.
	const name = "carbon-forecaster-DE"
	call(t, mf.URL, "POST", "registered-models/create", "", map[string]any{"name": name})
	call(t, mf.URL, "POST", "model-versions/create", "", map[string]any{"name": name, "source": src1})
	call(t, mf.URL, "POST", "registered-models/alias", "", map[string]any{"name": name, "alias": "champion", "version": "1"})

	env := []string{"AWS_ENDPOINT_URL=" + w.Endpoint, "AWS_ACCESS_KEY_ID=" + w.AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + w.SecretKey, "AWS_REGION=" + w.Region}
	base := startGateway(t, bin, dbURL, env, "--artifact-sources", "s3://"+bucket)
	hc := &http.Client{Timeout: 10 * time.Second}
	waitVersion(t, hc, base, "1", 20*time.Second)

	// carbongate writes version 2 and moves champion; MLflow sees both.
	v := call(t, base, "POST", "model-versions/create", "", map[string]any{"name": name, "source": src2})
	if mv, _ := v["model_version"].(map[string]any); mv["version"] != "2" {
		t.Fatalf("carbongate created %v, want version 2", v)
	}
	call(t, base, "POST", "registered-models/alias", "", map[string]any{"name": name, "alias": "champion", "version": "2"})
	mlflowSeesChampion(t, mf.URL, name, "2", src2, 2)
	waitVersion(t, hc, base, "2", 10*time.Second)
}

// mlflowSeesChampion checks through MLflow's REST API at mlflowURL that
// the champion alias of model name is version from source, that the
// version's download URI is source, and that MLflow's search lists
// versions versions of the model.
func mlflowSeesChampion(t *testing.T, mlflowURL, name, version, source string, versions int) {
	t.Helper()
	got := call(t, mlflowURL, "GET", "registered-models/alias?name="+name+"&alias=champion", "", nil)
	if mv, _ := got["model_version"].(map[string]any); mv["version"] != version || mv["source"] != source {
		t.Fatalf("MLflow sees champion %v, want version %s from %s", got, version, source)
	}
	uri := call(t, mlflowURL, "GET", "model-versions/get-download-uri?name="+name+"&version="+version, "", nil)
	if uri["artifact_uri"] != source {
		t.Fatalf("MLflow's download URI %v, want %s", uri, source)
	}
	s := call(t, mlflowURL, "GET", "model-versions/search?filter="+strings.ReplaceAll("name='"+name+"'", "'", "%27"), "", nil)
	if vs, _ := s["model_versions"].([]any); len(vs) != versions {
		t.Fatalf("MLflow search: %v, want %d versions", s, versions)
	}
}
