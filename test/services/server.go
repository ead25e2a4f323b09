package services

import (
	"os"
	"sync"
	"syscall"
	"testing"
	"time"
)

// shared is the one server of a kind per test binary, started on first
// use.
type shared[T any] struct {
	once sync.Once
	v    T
	err  error
}

// get returns the shared server, starting it with start on first use; a
// failed start fails tb (and every later caller).
func (s *shared[T]) get(tb testing.TB, what string, start func() (T, error)) T {
	tb.Helper()
	s.once.Do(func() { s.v, s.err = start() })
	if s.err != nil {
		tb.Fatalf("services: start %s: %v", what, s.err)
	}
	return s.v
}

// server holds a database server's current process, which restarts
// replace; mu also guards the fields of the server type embedding it.
type server struct {
	mu      sync.Mutex
	proc    *Proc
	dir     string         // run dir, removed when a private server is cleaned up
	lock    *os.File       // held while the server runs
	stopSig syscall.Signal // the server's clean shutdown
	holds   []*PortHold    // its ports, held across restarts
}

// holdPorts lets go of s's ports and holds n new ones (see PortHold), so
// that no other process takes one while s is down between a Stop and a
// Start. It returns their numbers.
func (s *server) holdPorts(n int) ([]int, error) {
	s.releasePorts()
	ports := make([]int, n)
	for i := range ports {
		h, err := HoldPort()
		if err != nil {
			s.releasePorts()
			return nil, err
		}
		s.holds = append(s.holds, h)
		ports[i] = h.Port
	}
	return ports, nil
}

// releasePorts lets go of s's ports.
func (s *server) releasePorts() {
	for _, h := range s.holds {
		h.Release()
	}
	s.holds = nil
}

// Running reports whether the server process is up.
func (s *server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc != nil && !s.proc.Exited()
}

// Log returns the current server process's log.
func (s *server) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return ""
	}
	return s.proc.Log()
}

// logTail is the end of the current server process's log.
func (s *server) logTail(n int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return ""
	}
	return s.proc.logTail(n)
}

// private makes s tb's own: at tb's cleanup it is stopped and its run dir
// removed, its log's tail logged first when tb failed.
func (s *server) private(tb testing.TB, what string) {
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("services: %s log (tail):\n%s", what, s.logTail(6000))
		}
		s.stop()
		s.releasePorts()
		s.lock.Close()
		if err := os.RemoveAll(s.dir); err != nil {
			tb.Logf("services: remove %s dir: %v", what, err)
		}
	})
}

// stop shuts the server down cleanly (stopSig) and waits for it.
func (s *server) stop() { s.shutdown(s.stopSig) }

// shutdown sends sig to the server process and waits for it to exit,
// killing it after 30 s.
func (s *server) shutdown(sig syscall.Signal) {
	s.mu.Lock()
	proc := s.proc
	s.mu.Unlock()
	if proc == nil || proc.Exited() {
		return
	}
	_ = syscall.Kill(proc.Pid(), sig)
	select {
	case <-proc.done:
	case <-time.After(30 * time.Second):
	}
	proc.Kill()
}
