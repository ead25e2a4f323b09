// Package abuse starts the real carbongate and carbonserve binaries on
// loopback and attacks them, each attack bounded in time and in
// connections: slow headers, slow bodies, idle connections, a keep-alive
// flood, oversized, truncated and malformed bodies (JSON, AdmissionReview,
// OIP over REST and gRPC), queries of the Carbon Aware SDK API that name
// the most work a URL can. While each attack runs a well-behaved client
// sends valid requests; an attack fails when that client sees a single
// failure, when its p99 exceeds maxSlowdown × the unloaded p99 of the same
// run, when the attacked process's memory grows beyond maxRSSGrowth, or
// when its RSS and goroutines do not return near their level before the
// attack (see settle). Run with `go test -v ./test/abuse` to see the
// figures.
package abuse

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/dataset/bundled"
	"github.com/carbongate/carbongate/models/workflow"
	"github.com/carbongate/carbongate/test/services"
	"github.com/carbongate/carbongate/test/testsupport"
)

// Built once per test binary by TestMain.
var (
	binDir    string // carbongate, carbonserve
	modelsDir string // lifecycle models of every bundled zone and the generic one
)

func TestMain(m *testing.M) { os.Exit(setup(m)) }

// setup builds the binaries and trains the models (concurrently: the build
// is another process), runs the tests and removes both.
func setup(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "carbongate-abuse-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	binDir, modelsDir = filepath.Join(tmp, "bin"), filepath.Join(tmp, "models")
	root, err := services.FindRepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	built := make(chan error, 1)
	go func() { built <- services.Build(root, binDir, "carbongate", "carbonserve") }()
	t0 := time.Now()
	err = train(modelsDir)
	if berr := <-built; berr != nil {
		err = berr
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "abuse:", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "abuse: binaries built and models trained in %v\n", time.Since(t0).Round(time.Millisecond))
	return testsupport.RunLeakChecked(m)
}

// train writes the lifecycle models `make run` serves (carbonctl train
// --data bundled --until 2021-01-01T00:00:00Z, one signal).
func train(dir string) error {
	tables, err := bundled.Load()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	_, err = workflow.Train(ctx, tables, dir, workflow.TrainConfig{
		Until:   time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC),
		Signals: []forecast.Signal{forecast.SignalLifecycle},
	})
	return err
}

// TestCarbongate attacks the gateway serving the scheduling API, the
// MLflow registry API (embedded store) and the admission webhook
// (fail-closed) over plain HTTP, with a small connection cap so that the
// connection attacks reach it cheaply.
func TestCarbongate(t *testing.T) {
	g := startGateway(t, false)
	k := startKeptOpen(g.addr, map[string][]byte{schedulePath: scheduleBody[:len(scheduleBody)/2], admissionPath: g.review[:len(g.review)/2]})
	runAttacks(t, g.target(t), gatewayAttacks(g))
	t.Run("truncated-kept-open", k.check)
}

// TestCarbongateFailOpen runs the attacks that make the gateway shed
// requests against the webhook in fail-open mode: it must still answer
// every valid review with a review.
func TestCarbongateFailOpen(t *testing.T) {
	g := startGateway(t, true)
	var subset []attack
	for _, a := range gatewayAttacks(g) {
		if a.shedding {
			subset = append(subset, a)
		}
	}
	runAttacks(t, g.target(t), subset)
}

// TestCarbonserve attacks the model server's REST port (and its gRPC port
// with malformed messages) while valid infer requests go to both.
func TestCarbonserve(t *testing.T) {
	s := startServe(t)
	k := startKeptOpen(s.addr, map[string][]byte{inferPath: s.inferBody[:len(s.inferBody)/2]})
	runAttacks(t, s.target(t), serveAttacks(s))
	t.Run("truncated-kept-open", k.check)
}
