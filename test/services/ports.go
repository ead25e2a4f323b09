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
	"sync/atomic"
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
