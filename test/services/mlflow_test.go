//go:build interop

package services_test

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/carbongate/carbongate/test/services"
)

// modelDir is a stand-in MLflow model directory (MLmodel plus files, one in
// a subdirectory) uploaded as the source of every model version.
var modelDir = map[string]string{
	"MLmodel":            "artifact_path: model\nflavors:\n  carbongate:\n    format: seasonal-naive\n",
	"model.json":         `{"lookback": 168, "horizon": 96}`,
	"data/weights.bin":   strings.Repeat("\x00\x01carbon", 512),
	"requirements.txt":   "numpy\n",
	"input_example.json": `{"history": [[1, 2, 3]]}`,
}

var (
	okLine   = regexp.MustCompile(`(?m)^ok  `)
	failLine = regexp.MustCompile(`(?m)^FAIL ([^:]+)`)
)

// TestMLflowClientAgainstMLflow runs check_mlflow_client.py against a real
// MLflow server (PostgreSQL backend store, SeaweedFS artifacts): every
// check must pass, and MLflow's schema must be in the database. A second
// run with a wrong digest must fail exactly the four download checks, so
// the checker cannot pass vacuously.
func TestMLflowClientAgainstMLflow(t *testing.T) {
	t.Parallel()
	s3 := services.StartWeed(t)
	bucket := s3.Bucket(t)
	db := services.StartPostgres(t).Database(t)
	mf := services.StartMLflow(t, services.MLflowOpts{BackendURI: db, S3: s3, Bucket: bucket, Prefix: "mlartifacts"})

	args := []string{"--source", "s3://" + bucket + "/models/zone-de"}
	for name, body := range modelDir {
		s3.PutObject(t, bucket, "models/zone-de/"+name, []byte(body))
		sum := sha256.Sum256([]byte(body))
		args = append(args, "--expect-file", name+"="+hex.EncodeToString(sum[:]))
	}

	report, code := services.RunMLflowClient(t, mf.URL, services.AWSEnv(s3), args...)
	if code != 0 || failLine.MatchString(report) {
		t.Fatalf("check_mlflow_client.py against MLflow: exit %d\n%s", code, report)
	}
	if n := len(okLine.FindAllString(report, -1)); n < 80 {
		t.Fatalf("%d checks passed, want at least 80\n%s", n, report)
	}

	// MLflow >= 3.10 keys every registry table by workspace too.
	c := pgConnect(t, db)
	rev := pgQueryString(t, c, "SELECT version_num FROM alembic_version")
	ws := pgQueryString(t, c, `SELECT count(*)::text FROM information_schema.columns
		WHERE table_name IN ('registered_models', 'model_versions', 'registered_model_aliases',
			'registered_model_tags', 'model_version_tags') AND column_name = 'workspace'`)
	if ws != "5" {
		t.Errorf("registry tables with a workspace column: %s, want 5 (alembic revision %s)", ws, rev)
	}
	t.Logf("MLflow schema: alembic revision %s", rev)

	wrong := append(slices.Clone(args), "--expect-file", "MLmodel="+strings.Repeat("0", 64))
	report, code = services.RunMLflowClient(t, mf.URL, services.AWSEnv(s3), wrong...)
	failed := failLine.FindAllStringSubmatch(report, -1)
	if code != 1 || len(failed) != 4 {
		t.Fatalf("with a wrong MLmodel digest: exit %d and %d failures, want 1 and the 4 downloads\n%s", code, len(failed), report)
	}
	for _, f := range failed {
		if !strings.HasPrefix(f[1], "download ") {
			t.Errorf("unexpected failure %q", f[1])
		}
	}
}
