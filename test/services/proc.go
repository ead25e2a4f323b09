package services

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// DefaultStartTimeout bounds how long a start waits for readiness. Python
// servers import for several seconds, more on a busy 2-core machine: KServe
// and MLServer took 91 and 94 s at a load of 20, most of the 2 minutes this
// was. A start that fails fails at once (its process exits); only a hung
// one waits this long.
const DefaultStartTimeout = 5 * time.Minute

// handedOut keeps FreePort from giving the same port twice in one process
// while the first taker has not bound it yet.
var handedOut sync.Map

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago and
// that this process has not handed out before. Another process may still
// take it first: starts retry with new ports when a bind fails.
func FreePort(tb testing.TB) int {
	tb.Helper()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatalf("services: free port: %v", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if _, taken := handedOut.LoadOrStore(port, portSeq.Add(1)); !taken {
			return port
		}
	}
	tb.Fatalf("services: no free port after 100 tries")
	return 0
}

// Proc is a started service process.
type Proc struct {
	Name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	waitErr error
	once    sync.Once
}

// Log returns the process's combined stdout and stderr so far.
func (p *Proc) Log() string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return string(b)
}

func (p *Proc) logTail(n int) string {
	s := p.Log()
	if len(s) > n {
		s = "...\n" + s[len(s)-n:]
	}
	return s
}

// Pid is the process id (also its process group id).
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// StatusKiB reads a field counted in kB of the process's /proc/<pid>/status
// (VmRSS, VmHWM, …), in KiB.
func (p *Proc) StatusKiB(field string) (int64, error) { return statusKiB(p.Pid(), field) }

func statusKiB(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no %s", pid, field)
}

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Kill ends the process and its children at once (SIGKILL to the process
// group) and waits for it. It is idempotent; Cleanup calls it too.
func (p *Proc) Kill() {
	p.once.Do(func() {
		if !p.Exited() {
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		}
		<-p.done
	})
}

// spec describes one attempt to start a service.
type spec struct {
	name  string
	dir   string
	path  string
	args  []string
	env   []string // added to os.Environ()
	ready func(ctx context.Context) error
}

// start runs specs from build (called again with fresh ports when an
// attempt dies of a port collision) until ready, or fails the test with
// the process's log.
func start(tb testing.TB, timeout time.Duration, build func() spec) *Proc {
	tb.Helper()
	if timeout <= 0 {
		timeout = DefaultStartTimeout
	}
	var last *Proc
	var lastErr error
	for attempt := 1; attempt <= 3; attempt++ {
		mark := portSeq.Load()
		s := build()
		ports := portsSince(mark, s.args, s.env)
		p, err := launch(tb, s, attempt)
		if err != nil {
			tb.Fatalf("services: start %s: %v", s.name, err)
		}
		tb.Cleanup(p.Kill)
		err = waitReady(p, s.ready, ports, timeout)
		if err == nil {
			tb.Cleanup(func() {
				if tb.Failed() {
					tb.Logf("services: %s log (tail):\n%s", p.Name, p.logTail(6000))
				}
			})
			return p
		}
		p.Kill()
		last, lastErr = p, err
		if !errors.Is(err, errPortTaken) && !portClash(p.Log()) {
			break
		}
	}
	tb.Fatalf("services: %s not ready: %v\n--- %s log (tail) ---\n%s", last.Name, lastErr, last.Name, last.logTail(12000))
	return nil
}

func portClash(log string) bool {
	l := strings.ToLower(log)
	return strings.Contains(l, "address already in use") || strings.Contains(l, "failed to bind") ||
		strings.Contains(l, "bind: address")
}

func launch(tb testing.TB, s spec, attempt int) (*Proc, error) {
	cmd := exec.Command(s.path, s.args...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), s.env...)
	return startProc(s.name, filepath.Join(tb.TempDir(), fmt.Sprintf("%s-%d.log", s.name, attempt)), cmd, syscall.SIGKILL, nil)
}

// startProc starts cmd in a process group of its own with stdout and
// stderr in a new file at logPath. The kernel sends it pdeath when the test
// binary dies; cred, when not nil, is the user it runs as.
func startProc(name, logPath string, cmd *exec.Cmd, pdeath syscall.Signal, cred *syscall.Credential) (*Proc, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: pdeath, Credential: cred}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, err
	}
	p := &Proc{Name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// startServer runs a server that outlives the test starting it: pick
// chooses its ports (nil: keep them, a restart), launch starts it; on a
// port collision both are called again, up to 3 times. It returns the
// process once ready answers nil and no other process listens on one of
// ports (then ready may have been answered by that process). A restart
// whose port another process took fails at once, naming that process:
// its clients hold URLs with that port, so it cannot move.
func startServer(pick func() error, ports func() []int, launch func() (*Proc, error), ready func(context.Context) error) (*Proc, error) {
	var lastErr error
	for attempt := 1; attempt <= 3; attempt++ {
		if pick != nil {
			if err := pick(); err != nil {
				return nil, err
			}
		}
		proc, err := launch()
		if err != nil {
			return nil, err
		}
		if err = waitReady(proc, ready, ports(), DefaultStartTimeout); err == nil {
			return proc, nil
		}
		proc.Kill()
		clash := errors.Is(err, errPortTaken) || portClash(proc.Log())
		if clash && pick == nil {
			return nil, fmt.Errorf("%s restart: its port %v was taken by another process while it was down (%s): %w\n--- log (tail) ---\n%s",
				proc.Name, ports(), portsListeners(ports()), err, proc.logTail(8000))
		}
		lastErr = fmt.Errorf("%s not ready: %w\n--- log (tail) ---\n%s", proc.Name, err, proc.logTail(8000))
		if !clash {
			break
		}
	}
	return nil, lastErr
}

// portsListeners describes who listens on each of ports.
func portsListeners(ports []int) string {
	var s []string
	for _, p := range ports {
		s = append(s, fmt.Sprintf("port %d: %s", p, listeners(p)))
	}
	return strings.Join(s, "; ")
}

// waitReady polls ready until it passes while p runs. A pass counts only
// if no other process listens on one of ports (p's own): else the check
// may have been answered by that process, and errPortTaken is returned.
func waitReady(p *Proc, ready func(context.Context) error, ports []int, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var err error
	for {
		if p.Exited() {
			return fmt.Errorf("process exited (%v) before it was ready (last check: %v)", p.waitErr, err)
		}
		cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
		err = ready(cctx)
		ccancel()
		if err == nil {
			if err = foreignListener(p.Pid(), ports); err == nil && !p.Exited() {
				return nil
			}
			if errors.Is(err, errPortTaken) {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready within %v: %w", timeout, err)
		case <-p.done:
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// httpStatus GETs url and returns the status code.
func httpStatus(ctx context.Context, url string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	c := http.Client{Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil}}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// wantStatus checks that GET url answers code.
func wantStatus(ctx context.Context, url string, code int) error {
	got, err := httpStatus(ctx, url)
	if err != nil {
		return err
	}
	if got != code {
		return fmt.Errorf("GET %s: %d, want %d", url, got, code)
	}
	return nil
}

// tcpOpen checks that addr accepts connections.
func tcpOpen(ctx context.Context, addr string) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return c.Close()
}

// ProcStatus reads a "kB" field of /proc/<pid>/status (VmRSS, VmHWM, ...),
// in KiB (Linux only); an error fails tb.
func ProcStatus(tb testing.TB, pid int, field string) int64 {
	tb.Helper()
	kb, err := statusKiB(pid, field)
	if err != nil {
		tb.Fatal(err)
	}
	return kb
}

// clockTick is the unit of the CPU times in /proc/<pid>/stat (USER_HZ,
// 100 on Linux whatever the kernel's own tick rate).
const clockTick = 10 * time.Millisecond

// ProcCPU is the user plus system CPU time process pid has used so far
// (all its threads), from /proc/<pid>/stat.
func ProcCPU(tb testing.TB, pid int) time.Duration {
	tb.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Fatalf("CPU time of process %d: %v", pid, err)
	}
	// The fields after the command name, which is in parentheses and may
	// hold spaces: state is field 3, utime 14 and stime 15.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		tb.Fatalf("/proc/%d/stat: %d fields after the command name, want at least 13", pid, len(f))
	}
	var ticks int64
	for _, v := range f[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			tb.Fatalf("/proc/%d/stat: %v", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * clockTick
}
