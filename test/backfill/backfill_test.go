//go:build interop

package backfill

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/dataset/bundled"
	storeconnect "github.com/carbongate/carbongate/forecast/store/connect"
	"github.com/carbongate/carbongate/models/workflow"
	"github.com/carbongate/carbongate/test/services"
)

// zones are the 12 zones of the bundled data.
var zones = []string{"DE", "ES", "NL", "PL", "SE", "US-CAL-CISO", "US-FLA-FPL", "US-MIDA-PJM", "US-NE-ISNE", "US-NW-BPAT", "US-NY-NYIS", "US-TEX-ERCO"}

// trained is the models dir trainDirect fills once per test binary;
// TestMain removes it.
var trained struct {
	once sync.Once
	dir  string
	err  error
}

// trainDirect returns the direct-signal models of every bundled zone,
// trained on data before 2021-01-01, once per test binary.
func trainDirect(tb testing.TB) string {
	tb.Helper()
	trained.once.Do(func() {
		tables, err := bundled.Load()
		if err != nil {
			trained.err = err
			return
		}
		if trained.dir, trained.err = os.MkdirTemp("", "carbongate-backfill-models-"); trained.err != nil {
			return
		}
		_, trained.err = workflow.Train(context.Background(), tables, trained.dir, workflow.TrainConfig{
			Until: time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC), Signals: []forecast.Signal{forecast.SignalDirect},
		})
	})
	if trained.err != nil {
		tb.Fatalf("train: %v", trained.err)
	}
	return trained.dir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if trained.dir != "" {
		os.RemoveAll(trained.dir)
	}
	os.Exit(code)
}

// run is one carbonctl process.
type run struct {
	cmd  *exec.Cmd
	out  bytes.Buffer
	done chan error
}

func start(tb testing.TB, bin string, args ...string) *run {
	tb.Helper()
	r := &run{cmd: exec.Command(filepath.Join(bin, "carbonctl"), append([]string{"backfill"}, args...)...), done: make(chan error, 1)}
	r.cmd.Stdout, r.cmd.Stderr = &r.out, &r.out
	if err := r.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() { r.done <- r.cmd.Wait() }()
	tb.Cleanup(func() {
		_ = r.cmd.Process.Kill()
		<-r.done
		r.done <- nil
	})
	return r
}

// wait returns the exit code, failing tb after timeout.
func (r *run) wait(tb testing.TB, timeout time.Duration) int {
	tb.Helper()
	select {
	case err := <-r.done:
		r.done <- err
		if err == nil {
			return 0
		}
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		tb.Fatalf("carbonctl: %v", err)
	case <-time.After(timeout):
		tb.Fatalf("carbonctl still running after %v:\n%s", timeout, r.out.String())
	}
	return -1
}

func (r *run) exited() bool {
	select {
	case err := <-r.done:
		r.done <- err
		return true
	default:
		return false
	}
}

// counts reads, in one snapshot on PostgreSQL, the forecast rows, their
// distinct keys, the checkpointed units and the rows of those units.
type counts struct{ rows, distinct, units, recorded int }

func count(tb testing.TB, url string) counts {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := connect(ctx, tb, url)
	defer c.Close(context.Background())
	var n counts
	err := c.QueryRow(ctx, `SELECT (SELECT count(*) FROM forecasts),
		(SELECT count(*) FROM (SELECT DISTINCT zone, signal, model_name, model_version, issued_at, target_time FROM forecasts) d),
		(SELECT count(*) FROM backfill_checkpoints),
		(SELECT count(*) FROM forecasts f JOIN backfill_checkpoints c ON f.zone = c.zone AND f.issued_at = c.issued_at)`).Scan(&n.rows, &n.distinct, &n.units, &n.recorded)
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// countMaybe is count without failing: ok false while the tables are
// absent or the server is down.
func countMaybe(url string) (counts, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, addr, err := storeconnect.Parse(url)
	if err != nil {
		return counts{}, false
	}
	c, err := pgx.Connect(ctx, addr)
	if err != nil {
		return counts{}, false
	}
	defer c.Close(context.Background())
	var n counts
	err = c.QueryRow(ctx, `SELECT (SELECT count(*) FROM forecasts), 0, (SELECT count(*) FROM backfill_checkpoints)`).Scan(&n.rows, &n.distinct, &n.units)
	return n, err == nil
}

// waitUnits polls until at least min units are checkpointed.
func waitUnits(tb testing.TB, r *run, url string, min int) counts {
	tb.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		if n, ok := countMaybe(url); ok && n.units >= min {
			return n
		}
		if r.exited() {
			tb.Fatalf("carbonctl exited before %d units were written:\n%s", min, r.out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	tb.Fatalf("no %d units written within 3 min:\n%s", min, r.out.String())
	return counts{}
}

func days(from, to string) int {
	a, _ := time.Parse(time.DateOnly, from)
	b, _ := time.Parse(time.DateOnly, to)
	return int(b.Sub(a)/(24*time.Hour)) + 1
}

func TestKillAndResume(t *testing.T) { eachBackend(t, killAndResume) }

func killAndResume(t *testing.T, be backend) {
	url := be.store(t)
	bin := services.GoBuild(t, "carbonctl")
	models := trainDirect(t)
	from := "2020-06-01"
	to, writeUnits := be.sized(from, "2021-03-31", 16)
	args := []string{"--zones", strings.Join(zones, ","), "--from", from, "--to", to, "--every", "24h", "--horizon", "96h",
		"--models", models, "--data", "bundled", "--signal", "direct", "--store", url, "--write-units", writeUnits, "--workers", "1", "--batch", "16"}
	units := len(zones) * days(from, to)

	r := start(t, bin, args...)
	waitUnits(t, r, url, 64)
	if err := r.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	r.wait(t, time.Minute)
	be.waitIdle(t, url)
	killed := count(t, url)
	t.Logf("killed after %d of %d units; %d rows of unrecorded units visible", killed.units, units, killed.rows-killed.recorded)
	if killed.units >= units {
		t.Fatalf("the run finished before the kill; nothing to resume")
	}
	be.consistent(t, killed, 96)

	again := start(t, bin, args...)
	if code := again.wait(t, 5*time.Minute); code != 0 {
		t.Fatalf("rerun exit %d:\n%s", code, again.out.String())
	}
	if want := fmt.Sprintf("%d already done", killed.units); !strings.Contains(again.out.String(), want) {
		t.Errorf("rerun output lacks %q:\n%s", want, again.out.String())
	}
	final := count(t, url)
	if final.units != units || final.rows != units*96 {
		t.Errorf("after the rerun: %d units, %d rows; want %d and %d", final.units, final.rows, units, units*96)
	}
	be.consistent(t, final, 96)

	// A third run finds everything done and writes nothing.
	third := start(t, bin, args...)
	if code := third.wait(t, 2*time.Minute); code != 0 {
		t.Fatalf("third run exit %d:\n%s", code, third.out.String())
	}
	if n := count(t, url); n != final {
		t.Errorf("third run changed the store: %+v, was %+v", n, final)
	}
	if !strings.Contains(third.out.String(), "0 units written") {
		t.Errorf("third run output:\n%s", third.out.String())
	}
}

// startServe starts carbonserve on the models dir and returns it with its
// REST port: on a port held for the test when port is 0 (fresh ones again
// if another process answers the readiness check on it), else on port,
// as a restarted server must be. The hold keeps other processes from
// taking the port while the server is down (see services.PortHold).
func startServe(t *testing.T, bin, models string, port int) (*services.Proc, int) {
	t.Helper()
	fixed := port
	p := services.StartBinary(t, services.Binary{
		Name: "carbonserve", Path: filepath.Join(bin, "carbonserve"),
		ArgsFor: func() []string {
			if port = fixed; port == 0 {
				port = services.HeldPort(t)
			}
			return []string{"--host", "127.0.0.1", "--http_port", strconv.Itoa(port), "--grpc_port", "0",
				"--models", models, "--signal", "direct", "--drain-delay", "0s", "--reload-interval", "0"}
		},
		Ready: func(ctx context.Context) error {
			return services.OIPReady("http://127.0.0.1:"+strconv.Itoa(port), "", "carbon-forecaster-DE")(ctx)
		},
	})
	return p, port
}

func TestOIPServerDiesMidBackfill(t *testing.T) {
	be := backends[0] // PostgreSQL: the OIP server is what fails here
	url := be.store(t)
	bin := services.GoBuild(t, "carbonctl", "carbonserve")
	models := trainDirect(t)
	// The rerun resumes the same job only with the same --endpoint (part of
	// its key), so the server comes back on the same port.
	srv, port := startServe(t, bin, models, 0)
	from, to := "2020-03-01", "2021-03-31"
	zs := zones[:6]
	args := []string{"--zones", strings.Join(zs, ","), "--from", from, "--to", to, "--horizon", "96h",
		"--endpoint", "http://127.0.0.1:" + strconv.Itoa(port), "--model", "models:/carbon-forecaster-{zone}@champion",
		"--data", "bundled", "--signal", "direct", "--store", url, "--write-units", "8", "--workers", "1", "--batch", "8",
		"--attempts", "3", "--call-timeout", "2s"}
	units := len(zs) * days(from, to)

	r := start(t, bin, args...)
	waitUnits(t, r, url, 16)
	srv.Kill()
	code := r.wait(t, 2*time.Minute)
	out := r.out.String()
	if code != 1 {
		t.Fatalf("exit %d with the server dead, want 1:\n%s", code, out)
	}
	if !strings.Contains(out, "retrying") || !strings.Contains(out, "unavailable") {
		t.Errorf("no retry logged or error not EUNAVAILABLE:\n%s", out)
	}
	stopped := count(t, url)
	be.consistent(t, stopped, 96)
	if stopped.units >= units {
		t.Fatalf("everything was written before the server died")
	}

	startServe(t, bin, models, port)
	again := start(t, bin, args...)
	if code := again.wait(t, 5*time.Minute); code != 0 {
		t.Fatalf("rerun exit %d:\n%s", code, again.out.String())
	}
	final := count(t, url)
	if final.units != units || final.rows != units*96 {
		t.Errorf("after the rerun: %d units, %d rows; want %d and %d", final.units, final.rows, units, units*96)
	}
	be.consistent(t, final, 96)
	// The rows carry the version carbonserve reports, not "unversioned".
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := connect(ctx, t, url)
	defer c.Close(context.Background())
	var versions int
	var version string
	if err := c.QueryRow(ctx, `SELECT count(DISTINCT model_version), min(model_version) FROM forecasts WHERE zone = 'DE'`).Scan(&versions, &version); err != nil {
		t.Fatal(err)
	}
	if versions != 1 || version == "" || version == "unversioned" {
		t.Errorf("zone DE rows have %d versions (%q), want the server's one", versions, version)
	}
}

func TestDatabaseRestartMidWrite(t *testing.T) { eachBackend(t, restartMidWrite) }

func restartMidWrite(t *testing.T, be backend) {
	url, restart := be.private(t)
	bin := services.GoBuild(t, "carbonctl")
	models := trainDirect(t)
	from := "2020-03-01"
	to, writeUnits := be.sized(from, "2021-03-31", 64)
	args := []string{"--zones", strings.Join(zones, ","), "--from", from, "--to", to,
		"--models", models, "--data", "bundled", "--signal", "direct", "--store", url, "--write-units", writeUnits}
	units := len(zones) * days(from, to)

	r := start(t, bin, args...)
	waitUnits(t, r, url, 64)
	// The restart must fall mid-run, or the test proves nothing: the
	// backfill still running and units still to write.
	if before := count(t, url); r.exited() || before.units >= units {
		t.Fatalf("the backfill ended (%v) or wrote all %d units before the restart: nothing to test", r.exited(), before.units)
	}
	restart(t)
	// Right after the restart, and while the backfill retries and goes on:
	// never a partial batch.
	for range 10 {
		be.consistentWhileWriting(t, url)
		if r.exited() {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	code := r.wait(t, 5*time.Minute)
	t.Logf("backfill across the restart: exit %d\n%s", code, r.out.String())
	if code != 0 {
		// Retries were spent while the server was down: a rerun resumes.
		again := start(t, bin, args...)
		if code := again.wait(t, 5*time.Minute); code != 0 {
			t.Fatalf("rerun exit %d:\n%s", code, again.out.String())
		}
	}
	final := count(t, url)
	if final.units != units || final.rows != units*96 {
		t.Errorf("final: %d units, %d rows; want %d and %d", final.units, final.rows, units, units*96)
	}
	be.consistent(t, final, 96)
}
