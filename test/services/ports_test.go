package services

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
)

// TestForeignListener checks the port ownership test that keeps a start
// from taking another process's server for its own: a listener of this
// test process is ours, and foreign to a child in a process group of its
// own; a port nobody listens on is never foreign.
func TestForeignListener(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port

	if err := foreignListener(os.Getpid(), []int{port}); err != nil {
		t.Fatalf("own listener on %d: %v, want nil", port, err)
	}
	child := exec.Command("sleep", "30")
	child.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	if err := foreignListener(child.Process.Pid, []int{port}); !errors.Is(err, errPortTaken) {
		t.Fatalf("listener of another process on %d: %v, want errPortTaken", port, err)
	}

	free := FreePort(t)
	if err := foreignListener(child.Process.Pid, []int{free}); err != nil {
		t.Fatalf("port %d nobody listens on: %v, want nil", free, err)
	}
}

// TestPortsSince checks that only the ports handed out for one attempt
// are taken from its arguments and environment, not an upstream's.
func TestPortsSince(t *testing.T) {
	upstream := FreePort(t)
	mark := portSeq.Load()
	own, other := FreePort(t), FreePort(t)
	args := []string{"--addr", "127.0.0.1:" + strconv.Itoa(own), "--upstream", "http://127.0.0.1:" + strconv.Itoa(upstream), "--workers", "64"}
	env := []string{"METRICS_PORT=" + strconv.Itoa(other)}
	got := portsSince(mark, args, env)
	if len(got) != 2 || got[0] != own || got[1] != other {
		t.Fatalf("portsSince = %v, want [%d %d] (upstream %d is not the attempt's)", got, own, other, upstream)
	}
}

// TestPortHold checks what restarts on the same port rely on: a server
// listens on a held port (again after it stopped), connections to it
// while no one listens are refused, and the kernel hands it to no bind to
// port 0 (how FreePort and most servers choose ports) while ports merely
// closed, the positive control, are handed out again.
func TestPortHold(t *testing.T) {
	port := HeldPort(t)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Fatalf("a connection to held port %d with no listener was accepted", port)
	}
	for range 2 {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("listen on held port %d: %v", port, err)
		}
		l.Close()
	}

	const n = 64
	held, closed := map[int]bool{}, map[int]bool{}
	for range n {
		held[HeldPort(t)] = true
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		closed[l.Addr().(*net.TCPAddr).Port] = true
		l.Close()
	}
	var heldHits, closedHits int
	for range 20000 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if held[p] || p == port {
			heldHits++
		}
		if closed[p] {
			closedHits++
		}
	}
	if heldHits != 0 || closedHits == 0 {
		t.Fatalf("20000 binds to port 0 got a held port %d times and a closed one %d times, want 0 and some", heldHits, closedHits)
	}
	t.Logf("20000 binds to port 0: closed ports (%d) handed out %d times, held ones (%d) never", n, closedHits, n)
}
