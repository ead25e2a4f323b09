package services

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// NotebooksEnv holds papermill and ipykernel, pandas, scikit-learn,
// matplotlib, mlflow 3.17.2 (client), mlserver 1.7.1 and mlserver-mlflow
// 1.7.1: everything notebooks/ needs, in one venv.
var NotebooksEnv = Requirements{File: "requirements-notebooks.txt", EnvVar: "CARBONGATE_VENV_NOTEBOOKS"}

// NotebookTimeout bounds one notebook run.
const NotebookTimeout = 5 * time.Minute

// NotebookDir is notebooks/ of the repository.
func NotebookDir(tb testing.TB) string {
	tb.Helper()
	return filepath.Join(RepoRoot(tb), "notebooks")
}

// notebookEnv is the environment of the notebooks venv's programs: its bin
// first on PATH (papermill's python3 kernel is the venv's), Jupyter,
// IPython and matplotlib state in dir, MLflow telemetry off, plus env.
func notebookEnv(tb testing.TB, venv, dir string, env map[string]string) []string {
	tb.Helper()
	out := append(pythonEnv(tb),
		"PATH="+filepath.Join(venv, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"),
		"JUPYTER_RUNTIME_DIR="+filepath.Join(dir, "jupyter-runtime"),
		"JUPYTER_DATA_DIR="+filepath.Join(dir, "jupyter-data"),
		"IPYTHONDIR="+filepath.Join(dir, "ipython"),
		"MPLCONFIGDIR="+filepath.Join(dir, "matplotlib"),
		"MLFLOW_DISABLE_TELEMETRY=true", "DO_NOT_TRACK=true",
	)
	return append(out, envList(env)...)
}

// RunNotebook executes notebooks/<name> headless with papermill from the
// notebooks venv (kernel python3 of that venv), in a temp working
// directory, with params passed as string parameters (-p key value) and
// env added to the environment. It returns the executed notebook's path
// (in a temp dir, never in the repository). It fails the test, with
// papermill's output, when the notebook raises or does not finish within
// NotebookTimeout.
func RunNotebook(tb testing.TB, name string, params, env map[string]string) string {
	tb.Helper()
	venv := Venv(tb, NotebooksEnv)
	dir := tb.TempDir()
	out := filepath.Join(dir, strings.TrimSuffix(filepath.Base(name), ".ipynb")+".out.ipynb")
	args := []string{"-m", "papermill", filepath.Join(NotebookDir(tb), name), out, "-k", "python3", "--no-progress-bar", "--log-output"}
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		args = append(args, "-p", k, params[k])
	}
	ctx, cancel := context.WithTimeout(context.Background(), NotebookTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(venv, "bin", "python"), args...)
	cmd.Dir = dir
	cmd.Env = append(cmd.Environ(), notebookEnv(tb, venv, dir, env)...)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	start := time.Now()
	if err := cmd.Run(); err != nil {
		tb.Fatalf("services: papermill %s: %v\n%s", name, err, tailOf(log.String(), 12000))
	}
	tb.Logf("services: ran %s in %v", name, time.Since(start).Round(time.Millisecond))
	return out
}

// MLflowModelServer is MLServer serving one registered MLflow model with
// its mlflow runtime.
type MLflowModelServer struct {
	*OIPServer
	// Version is the registered model version being served (also the OIP
	// model version).
	Version string
}

// StartMLServerMLflow fetches models:/<name>@<alias> from the MLflow
// server at trackingURI with notebooks/mlserver_model.py (MLflow's own
// client; the server proxies the artifacts) and serves it with MLServer's
// mlflow runtime (mlserver_mlflow.MLflowRuntime) from the notebooks venv,
// REST and gRPC on free loopback ports, under the OIP model name name. It
// returns once the model is ready; the test fails when the model cannot
// be fetched or served.
func StartMLServerMLflow(tb testing.TB, trackingURI, name, alias string) *MLflowModelServer {
	tb.Helper()
	venv := Venv(tb, NotebooksEnv)
	work := tb.TempDir()
	repo := filepath.Join(work, "repository")
	env := notebookEnv(tb, venv, work, nil)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(venv, "bin", "python"), filepath.Join(NotebookDir(tb), "mlserver_model.py"),
		"--tracking-uri", trackingURI, "--name", name, "--alias", alias, "--out", repo)
	cmd.Dir = work
	cmd.Env = append(cmd.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		tb.Fatalf("services: mlserver_model.py %s@%s: %v\n%s", name, alias, err, tailOf(stderr.String(), 6000))
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	var fetched struct{ Version string }
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &fetched); err != nil || fetched.Version == "" {
		tb.Fatalf("services: mlserver_model.py printed %q: %v", stdout.String(), err)
	}

	srv := &MLflowModelServer{OIPServer: &OIPServer{Model: name}, Version: fetched.Version}
	srv.Proc = start(tb, DefaultStartTimeout, func() spec {
		hp, gp, mp := FreePort(tb), FreePort(tb), FreePort(tb)
		srv.RESTURL = "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(hp))
		srv.GRPCAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(gp))
		return spec{
			name: "mlserver-mlflow-" + name,
			dir:  work,
			path: filepath.Join(venv, "bin", "mlserver"),
			args: []string{"start", repo},
			env: append(slices.Clone(env),
				"MLSERVER_HOST=127.0.0.1",
				"MLSERVER_HTTP_PORT="+strconv.Itoa(hp),
				"MLSERVER_GRPC_PORT="+strconv.Itoa(gp),
				"MLSERVER_METRICS_PORT="+strconv.Itoa(mp),
			),
			ready: readyCheck(srv.RESTURL, srv.GRPCAddr, name, true),
		}
	})
	return srv
}
