package cluster

import (
	"errors"
	"os/exec"
	"slices"
	"strings"

	"github.com/carbongate/carbongate/test/services"
)

// cleanIPTables removes what kube-proxy and the CNI bridge plugin (ipMasq)
// added: kube-proxy's own --cleanup first (when its binary is known), then
// every rule that jumps to a KUBE-* chain or carries a comment naming one of
// the cluster's CNI networks, and those chains. Nothing else runs
// kube-proxy on the host while the cluster holds its lock, and other CNI
// users' chains carry other network names.
func cleanIPTables(logf func(string, ...any), kubeProxy string) error {
	var errs []error
	if kubeProxy != "" {
		if out, err := exec.Command(kubeProxy, "--cleanup", "--v=0").CombinedOutput(); err != nil {
			logf("teardown: kube-proxy --cleanup: %v: %s", err, services.TailLines(string(out), 5))
		}
	}
	for _, ipt := range []string{"iptables", "ip6tables"} {
		if _, err := exec.LookPath(ipt); err != nil {
			continue
		}
		for _, table := range []string{"filter", "nat", "mangle"} {
			if err := cleanTable(logf, ipt, table); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

func cleanTable(logf func(string, ...any), ipt, table string) error {
	out, err := run(ipt, "-w", "-t", table, "-S")
	if err != nil {
		return err
	}
	ours := map[string]bool{} // chains to delete
	var rules []string        // rules to delete, as -A lines
	for line := range strings.Lines(out) {
		line = strings.TrimSpace(line)
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch {
		case f[0] == "-N" && strings.HasPrefix(f[1], "KUBE-"):
			ours[f[1]] = true
		case f[0] == "-A" && strings.Contains(line, namePrefix):
			rules = append(rules, line)
			if strings.HasPrefix(f[1], "CNI-") {
				ours[f[1]] = true
			}
			if t := target(f); strings.HasPrefix(t, "CNI-") {
				ours[t] = true
			}
		case f[0] == "-A" && strings.HasPrefix(target(f), "KUBE-"):
			rules = append(rules, line)
		}
	}
	var errs []error
	for _, r := range rules {
		f := strings.Fields(r)
		if ours[f[1]] {
			continue // goes with its chain
		}
		args := append([]string{"-w", "-t", table, "-D"}, shellFields(strings.TrimPrefix(r, "-A "))...)
		if _, err := run(ipt, args...); err != nil {
			errs = append(errs, err)
		}
	}
	chains := make([]string, 0, len(ours))
	for c := range ours {
		chains = append(chains, c)
	}
	slices.Sort(chains)
	for _, c := range chains {
		run(ipt, "-w", "-t", table, "-F", c)
	}
	for _, c := range chains {
		if _, err := run(ipt, "-w", "-t", table, "-X", c); err != nil {
			errs = append(errs, err)
		}
	}
	if n := len(rules) + len(chains); n > 0 {
		logf("teardown: %s -t %s: deleted %d rules and %d chains", ipt, table, len(rules), len(chains))
	}
	return errors.Join(errs...)
}

// target is the -j or -g target of a rule's fields.
func target(f []string) string {
	for i, x := range f {
		if (x == "-j" || x == "-g") && i+1 < len(f) {
			return f[i+1]
		}
	}
	return ""
}

// shellFields splits an iptables -S line as a shell would (double quotes
// group words; iptables escapes quotes inside as \").
func shellFields(s string) []string {
	var out []string
	var cur strings.Builder
	inQuote, inWord := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		case c == '"':
			inQuote, inWord = !inQuote, true
		case c == ' ' && !inQuote:
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out
}
