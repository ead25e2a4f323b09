package services

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// portSeq numbers the ports FreePort hands out, so that start can tell
// the ports picked for one attempt from those of servers started before
// it (an upstream's URL in the arguments).
var portSeq atomic.Int64

// errPortTaken is a readiness failure that means another process holds
// one of the attempt's ports: the readiness check may have been answered
// by that process, so the attempt is retried with new ports.
var errPortTaken = errors.New("port held by another process")

var digits = regexp.MustCompile(`\d{2,5}`)

// portsSince returns the ports handed out after mark that occur in words
// (arguments and environment of one attempt).
func portsSince(mark int64, words ...[]string) []int {
	var ports []int
	for _, ws := range words {
		for _, w := range ws {
			for _, d := range digits.FindAllString(w, -1) {
				p, _ := strconv.Atoi(d)
				if seq, ok := handedOut.Load(p); ok && seq.(int64) > mark {
					ports = append(ports, p)
				}
			}
		}
	}
	return ports
}

// foreignListener returns an error wrapping errPortTaken when a TCP socket
// listening on one of ports belongs to no process of the process group
// led by pid (Linux /proc). A port no one listens on yet is not foreign.
func foreignListener(pid int, ports []int) error {
	if len(ports) == 0 {
		return nil
	}
	listening, err := listeningInodes(ports)
	if err != nil || len(listening) == 0 {
		return err
	}
	ours := groupSocketInodes(pid)
	for inode, port := range listening {
		if !ours[inode] {
			return fmt.Errorf("%w: a socket listening on port %d is not the started process's", errPortTaken, port)
		}
	}
	return nil
}

// listeningInodes maps the inode of every listening TCP socket (IPv4 and
// IPv6) on one of ports to its port.
func listeningInodes(ports []int) (map[string]int, error) {
	want := map[int]bool{}
	for _, p := range ports {
		want[p] = true
	}
	out := map[string]int{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return nil, err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			f := strings.Fields(sc.Text())
			if len(f) < 10 || f[3] != "0A" { // 0A: LISTEN
				continue
			}
			_, hexPort, ok := strings.Cut(f[1], ":")
			p, err := strconv.ParseInt(hexPort, 16, 32)
			if ok && err == nil && want[int(p)] {
				out[f[9]] = int(p)
			}
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// groupSocketInodes returns the inodes of the sockets open in pid and in
// every process whose process group is pid.
func groupSocketInodes(pid int) map[string]bool {
	inodes := map[string]bool{}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range procs {
		n, _ := strconv.Atoi(filepath.Base(dir))
		if n != pid && processGroup(dir) != pid {
			continue
		}
		fds, _ := filepath.Glob(dir + "/fd/*")
		for _, fd := range fds {
			link, err := os.Readlink(fd)
			if inode, ok := strings.CutPrefix(link, "socket:["); err == nil && ok {
				inodes[strings.TrimSuffix(inode, "]")] = true
			}
		}
	}
	return inodes
}

// processGroup reads the process group id from dir/stat (field 5), or -1.
func processGroup(dir string) int {
	b, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return -1
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 3 {
		return -1
	}
	g, err := strconv.Atoi(f[2])
	if err != nil {
		return -1
	}
	return g
}

// PortHold keeps a TCP port of 127.0.0.1 for one server across its
// starts, stops and restarts. It is a socket bound to the port with
// SO_REUSEADDR that never listens: the kernel hands the port to no one
// else while it is bound (not to a bind to port 0, as FreePort does, nor
// as the local port of an outgoing connection), yet a server that sets
// SO_REUSEADDR on its listener, as Go servers (also in a container on the
// host network), PostgreSQL and CrateDB do, listens on it alongside. A
// connection to a held port that no server listens on is refused, as to a
// free one. A server that does not set SO_REUSEADDR cannot bind a held
// port: use FreePort for it.
type PortHold struct {
	Port int
	fd   int
	once sync.Once
}

// HoldPort binds a new PortHold to a free port chosen by the kernel, so
// there is no moment between choosing the port and holding it, and marks
// the port handed out like FreePort's.
func HoldPort() (*PortHold, error) {
	for range 100 {
		fd, port, err := bindLoopback()
		if err != nil {
			return nil, fmt.Errorf("hold a port: %w", err)
		}
		if _, taken := handedOut.LoadOrStore(port, portSeq.Add(1)); !taken {
			return &PortHold{Port: port, fd: fd}, nil
		}
		syscall.Close(fd) // handed out by FreePort, maybe not bound by its taker yet
	}
	return nil, errors.New("hold a port: no free port after 100 tries")
}

// bindLoopback returns a TCP socket bound with SO_REUSEADDR to a port of
// 127.0.0.1 that the kernel chose, and that port.
func bindLoopback() (fd, port int, err error) {
	fd, err = syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, 0, err
	}
	err = syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1)
	if err == nil {
		err = syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}})
	}
	var sa syscall.Sockaddr
	if err == nil {
		sa, err = syscall.Getsockname(fd)
	}
	if err != nil {
		syscall.Close(fd)
		return -1, 0, err
	}
	return fd, sa.(*syscall.SockaddrInet4).Port, nil
}

// Release lets the port go. It is idempotent.
func (h *PortHold) Release() { h.once.Do(func() { syscall.Close(h.fd) }) }

// HeldPort returns a free port of 127.0.0.1 held (see PortHold) until
// tb's cleanup: for a server that restarts on the same port, which no
// other process can take while the server is down.
func HeldPort(tb testing.TB) int {
	tb.Helper()
	h, err := HoldPort()
	if err != nil {
		tb.Fatalf("services: %v", err)
	}
	tb.Cleanup(h.Release)
	return h.Port
}

// CheckListener returns an error naming the process when a socket
// listening on port belongs to no process of the process group led by
// pid: an answer on port then came from another server. A port no one
// listens on passes.
func CheckListener(pid, port int) error {
	if err := foreignListener(pid, []int{port}); err != nil {
		return fmt.Errorf("%w (%s)", err, listeners(port))
	}
	return nil
}

// listeners describes the processes listening on port, for an error
// message: "pid 123 (postgres)", or "no process found".
func listeners(port int) string {
	inodes, err := listeningInodes([]int{port})
	if err != nil || len(inodes) == 0 {
		return "no process found listening"
	}
	var who []string
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range procs {
		fds, _ := filepath.Glob(dir + "/fd/*")
		for _, fd := range fds {
			link, err := os.Readlink(fd)
			inode, ok := strings.CutPrefix(link, "socket:[")
			if _, listening := inodes[strings.TrimSuffix(inode, "]")]; err == nil && ok && listening {
				comm, _ := os.ReadFile(dir + "/comm")
				who = append(who, fmt.Sprintf("pid %s (%s)", filepath.Base(dir), strings.TrimSpace(string(comm))))
				break
			}
		}
	}
	if len(who) == 0 {
		return "listening process not found"
	}
	return "listening: " + strings.Join(who, ", ")
}
