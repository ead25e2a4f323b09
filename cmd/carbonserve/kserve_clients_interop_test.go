//go:build interop

package main

import (
	"path/filepath"
	"strconv"
	"testing"

	"github.com/carbongate/carbongate/models/serve/servetest"
	"github.com/carbongate/carbongate/test/services"
)

// TestKServePythonClients runs KServe's own Python clients
// (InferenceRESTClient, InferenceGRPCClient from kserve 0.20.0, via
// test/python/check_oip_server.py) against carbonserve: server liveness
// and readiness, model readiness and metadata, inference B=1 and B=3 over
// REST JSON, REST binary, gRPC raw and gRPC typed contents, and the error
// cases (unknown model, wrong shape, wrong datatype). Every check must pass.
func TestKServePythonClients(t *testing.T) {
	root := t.TempDir()
	servetest.Save(t, filepath.Join(root, "lifecycle", "DE"), servetest.Ridge(t, "carbon-forecaster-DE", "DE", 0))
	m, _ := startMain(t, noEnv, "--models", root, "--reload-interval", "0")
	report, code := services.CheckOIPServer(t, "http://"+m.HTTPAddr(), m.GRPCAddr(), "carbon-forecaster-DE",
		"--lookback", strconv.Itoa(servetest.Lookback), "--horizon", strconv.Itoa(servetest.Horizon))
	if code != 0 {
		t.Fatalf("check_oip_server.py against carbonserve failed:\n%s", report)
	}
	t.Logf("check_oip_server.py against carbonserve:\n%s", report)
}
