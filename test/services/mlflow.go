package services

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// MLflowEnv holds mlflow 3.17.2 (server and client) with psycopg2-binary
// (PostgreSQL backend store) and boto3 (S3 artifacts).
var MLflowEnv = Requirements{File: "requirements-mlflow.txt", EnvVar: "CARBONGATE_VENV_MLFLOW"}

// MLflowCrateDBEnv holds mlflow-cratedb 3.12.0 (mlflow 3.12.0 patched for
// CrateDB, sqlalchemy-cratedb) and boto3: the server StartMLflow runs for a
// crate:// backend.
var MLflowCrateDBEnv = Requirements{File: "requirements-mlflow-cratedb.txt", EnvVar: "CARBONGATE_VENV_MLFLOW_CRATEDB"}

// MLflowOpts configures StartMLflow.
type MLflowOpts struct {
	// BackendURI is the backend store, which also holds the model
	// registry: a PostgreSQL URL (Postgres.Database; a postgres:// or
	// postgresql:// scheme is passed on as postgresql+psycopg2://, the
	// driver the venv has: SQLAlchemy 2.1 defaults to psycopg 3) or
	// sqlite:////abs/path.db. MLflow creates or migrates its schema there
	// at start. A crate:// URL (CrateDB.MLflowURI: CrateDB's HTTP port and
	// ?schema=) runs mlflow-cratedb from MLflowCrateDBEnv instead, which
	// creates its tables with CREATE TABLE IF NOT EXISTS. Required.
	BackendURI string
	// S3, Bucket and Prefix make the artifact store the server proxies,
	// --artifacts-destination s3://Bucket/Prefix on that SeaweedFS.
	// S3 and Bucket are required; Prefix may be empty.
	S3             *S3
	Bucket, Prefix string
	// StartTimeout bounds the wait for /health (schema migrations on a
	// fresh database included); 0 means DefaultStartTimeout (a loaded
	// machine took more than 3 minutes).
	StartTimeout time.Duration
	// DefaultWorkers runs the server with MLflow's own default number of
	// workers (4) instead of one.
	DefaultWorkers bool
}

// MLflow is a running `mlflow server` (tracking and model registry, one
// uvicorn worker unless MLflowOpts.DefaultWorkers) bound to 127.0.0.1.
type MLflow struct {
	*Proc
	// URL is the server's base URL, e.g. "http://127.0.0.1:41234": the
	// tracking and registry URI for MlflowClient.
	URL string
	// ArtifactsDestination is s3://Bucket/Prefix.
	ArtifactsDestination string
}

// StartMLflow runs a real `mlflow server` from the MLflow venv with
// opts' backend store and S3 artifact destination, on a free loopback
// port, with telemetry and the background job runner off. It returns
// once GET /health answers 200 and kills the server in tb.Cleanup; the
// server's log is printed when the test fails. It fails the test when
// opts are incomplete or the server does not come up.
func StartMLflow(tb testing.TB, opts MLflowOpts) *MLflow {
	tb.Helper()
	if opts.BackendURI == "" || opts.S3 == nil || opts.Bucket == "" {
		tb.Fatalf("services: StartMLflow needs BackendURI, S3 and Bucket")
	}
	timeout := opts.StartTimeout
	if timeout <= 0 {
		timeout = DefaultStartTimeout
	}
	backend := opts.BackendURI
	for _, scheme := range []string{"postgres://", "postgresql://"} {
		if rest, ok := strings.CutPrefix(backend, scheme); ok {
			backend = "postgresql+psycopg2://" + rest
		}
	}
	venv, command := Venv(tb, MLflowEnv), "mlflow"
	if strings.HasPrefix(backend, "crate://") {
		venv, command = Venv(tb, MLflowCrateDBEnv), "mlflow-cratedb"
	}
	dir := tb.TempDir()
	m := &MLflow{ArtifactsDestination: "s3://" + strings.TrimSuffix(opts.Bucket+"/"+strings.Trim(opts.Prefix, "/"), "/")}
	env := append(pythonEnv(tb), envList(AWSEnv(opts.S3))...)
	env = append(env,
		"MLFLOW_DISABLE_TELEMETRY=true", "DO_NOT_TRACK=true",
		"MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false", // no huey consumer process
	)
	m.Proc = start(tb, timeout, func() spec {
		port := strconv.Itoa(FreePort(tb))
		hostPort := net.JoinHostPort("127.0.0.1", port)
		m.URL = "http://" + hostPort
		args := []string{"server",
			"--backend-store-uri", backend,
			"--artifacts-destination", m.ArtifactsDestination,
			"--host", "127.0.0.1", "--port", port,
			"--allowed-hosts", hostPort + ",localhost:" + port,
			"--cors-allowed-origins", m.URL + ",http://localhost:" + port,
		}
		if !opts.DefaultWorkers {
			args = append(args, "--workers", "1")
		}
		return spec{
			name:  "mlflow",
			dir:   dir,
			path:  filepath.Join(venv, "bin", command),
			args:  args,
			env:   env,
			ready: func(ctx context.Context) error { return wantStatus(ctx, m.URL+"/health", 200) },
		}
	})
	return m
}

// AWSEnv is the environment that points MLflow and boto3 at s: endpoint
// (MLFLOW_S3_ENDPOINT_URL), the test identity's keys and region, no
// instance-metadata lookups and no optional checksums.
func AWSEnv(s *S3) map[string]string {
	return map[string]string{
		"MLFLOW_S3_ENDPOINT_URL":           s.Endpoint,
		"AWS_ACCESS_KEY_ID":                s.AccessKey,
		"AWS_SECRET_ACCESS_KEY":            s.SecretKey,
		"AWS_DEFAULT_REGION":               s.Region,
		"AWS_EC2_METADATA_DISABLED":        "true",
		"AWS_REQUEST_CHECKSUM_CALCULATION": "when_required",
		"AWS_RESPONSE_CHECKSUM_VALIDATION": "when_required",
	}
}

// RunMLflowClient runs test/python/check_mlflow_client.py — MLflow's own
// MlflowClient against the model registry at registryURI (a real MLflow
// server or carbongate) — with env added to the environment (S3
// credentials for the artifact download: AWSEnv; MLFLOW_TRACKING_TOKEN)
// and args passed on (e.g. "--source", "s3://b/models/m",
// "--expect-file", "MLmodel=<sha256>"). It returns the report (one line
// per check, "ok" or "FAIL") and exit code (0: every check passed, 1: some
// failed); it fails the test only when the checker cannot run (exit 2 is
// bad usage).
func RunMLflowClient(tb testing.TB, registryURI string, env map[string]string, args ...string) (report string, exitCode int) {
	tb.Helper()
	venv := Venv(tb, MLflowEnv)
	argv := append([]string{filepath.Join(PythonDir(tb), "check_mlflow_client.py"), "--registry-uri", registryURI}, args...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(venv, "bin", "python"), argv...)
	cmd.Dir = tb.TempDir()
	cmd.Env = append(append(cmd.Environ(), pythonEnv(tb)...), envList(env)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return stdout.String(), 0
	case errors.As(err, &ee) && ee.ExitCode() == 1:
		if stderr.Len() > 0 {
			tb.Logf("services: check_mlflow_client.py stderr (tail):\n%s", tailOf(stderr.String(), 6000))
		}
		return stdout.String(), 1
	}
	tb.Fatalf("services: check_mlflow_client.py: %v\n%s\n%s", err, stdout.String(), stderr.String())
	return "", 0
}

func tailOf(s string, n int) string {
	if len(s) > n {
		return "...\n" + s[len(s)-n:]
	}
	return s
}

// envList turns env into sorted KEY=VALUE entries.
func envList(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}
