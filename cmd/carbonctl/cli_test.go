package main

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/carbongate/carbongate/cmd/internal/cli"
)

// helpCases are, per command, the command lines asking each of its
// FlagSets for help.
func helpCases() map[string][][]string {
	out := map[string][][]string{"completion": {{"completion", "-h"}}}
	for name, c := range commands() {
		helps := c.helpArgs
		if helps == nil {
			helps = [][]string{{"-h"}}
		}
		for _, h := range helps {
			out[name] = append(out[name], append([]string{name}, h...))
		}
	}
	return out
}

// TestCLIConventions: for every command and FlagSet, -h and help <cmd>
// print the usage on stdout and exit 0, an unknown flag exits 2 naming it
// on stderr only, and the usage lists every flag with its variable, none
// of which is one the test harness sets.
func TestCLIConventions(t *testing.T) {
	t.Parallel()
	cases := helpCases()
	if len(cases) != len(commands())+1 {
		t.Fatalf("%d cases for %d commands", len(cases), len(commands()))
	}
	for name, helps := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			code, out, errOut := runCtl(t, "help", name)
			if code != 0 || errOut != "" || !strings.Contains(out, "usage: carbonctl "+name) {
				t.Errorf("help %s: exit %d\nstdout %s\nstderr %s", name, code, out, errOut)
			}
			for _, args := range helps {
				code, out, errOut := runCtl(t, args...)
				if code != 0 || errOut != "" || !strings.Contains(out, "usage: carbonctl "+name) {
					t.Errorf("%v: exit %d\nstdout %s\nstderr %s", args, code, out, errOut)
				}
				bad := append(args[:len(args)-1:len(args)-1], "--no-such-flag")
				code, badOut, errOut := runCtl(t, bad...)
				if code != 2 || badOut != "" || !strings.HasPrefix(errOut, "carbonctl "+name+": unknown flag --no-such-flag\n") {
					t.Errorf("%v: exit %d\nstdout %s\nstderr %s", bad, code, badOut, errOut)
				}
				if name == "completion" {
					continue
				}
				col := &cli.Collector{}
				if err := commands()[name].run(context.Background(), args[1:], col, os.Stderr); cli.ExitCode(err) != 0 || len(col.Sets) != 1 {
					t.Fatalf("%v: %v, %d FlagSets", args, err, len(col.Sets))
				}
				col.Sets[0].VisitAll(func(f *flag.Flag) {
					env := cli.EnvName(f.Name)
					if cli.Reserved(env) {
						t.Errorf("%v: --%s maps onto %s, which the test harness sets", args, f.Name, env)
					}
					if !strings.Contains(out, "  --"+f.Name) || (!strings.Contains(out, "env "+env+"\n") && f.Name != "format") {
						t.Errorf("%v: the usage lacks --%s or %s", args, f.Name, env)
					}
				})
			}
		})
	}
}

func TestHelpCommandList(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}} {
		code, out, errOut := runCtl(t, args...)
		if code != 0 || errOut != "" || !strings.Contains(out, "commands:") || !strings.Contains(out, "  promote ") || !strings.Contains(out, "Exit codes") {
			t.Errorf("%v: exit %d\nstdout %s\nstderr %s", args, code, out, errOut)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "usage: carbonctl <command>"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"help", "frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"completion"}, "want one shell"},
		{[]string{"completion", "tcsh"}, `shell "tcsh"`},
		{[]string{"registry"}, "want a subcommand"},
	} {
		if code, out, errOut := runCtl(t, c.args...); code != 2 || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d\nstdout %s\nstderr %s\nwant %q", c.args, code, out, errOut, c.want)
		}
	}
}

// TestCompletionScripts: the scripts name every command and every flag of
// every command; the bash script parses (package cli checks the syntax of
// each shell installed).
func TestCompletionScripts(t *testing.T) {
	t.Parallel()
	for _, shell := range cli.Shells {
		code, out, errOut := runCtl(t, "completion", shell)
		if code != 0 || errOut != "" {
			t.Fatalf("%s: exit %d %s", shell, code, errOut)
		}
		for name, c := range commands() {
			if !strings.Contains(out, name) {
				t.Errorf("%s script lacks command %s", shell, name)
			}
			for _, fs := range c.flagSets(context.Background()) {
				for _, f := range cli.Names(fs.FlagSet) {
					if !strings.Contains(out, f) {
						t.Errorf("%s script lacks --%s of %s", shell, f, name)
					}
				}
			}
		}
	}
}

// TestEnvHonoured sets, for every command, a flag through its variable
// (the old hand-written names CARBONGATE_URL, CARBONGATE_REGISTRY and
// CARBONGATE_STORE among them) and checks the command used it. Not
// parallel: it sets the environment.
func TestEnvHonoured(t *testing.T) {
	dir := t.TempDir()
	tested := map[string]bool{}
	for _, c := range []struct {
		cmd  string
		env  map[string]string
		args []string
		code int
		want string // in stdout when code is 0, else in stderr
	}{
		{"ingest", map[string]string{"CARBONGATE_MAX_GAP": "-1"}, []string{"--out", dir, "x.csv"}, 2, "--max-gap must be"},
		{"train", map[string]string{"CARBONGATE_SIGNAL": "marginal"}, []string{"--data", dir, "--until", "2021-01-01", "--out", dir}, 2, "--signal"},
		{"evaluate", map[string]string{"CARBONGATE_OUTPUT": "xml"}, []string{"--store", "postgres://x/y"}, 2, `--output "xml"`},
		{"evaluate", map[string]string{"CARBONGATE_FORMAT": "xml"}, []string{"--store", "postgres://x/y", "--output", "yaml"}, 2, `--output "yaml"`},
		{"deploy", map[string]string{"CARBONGATE_ZONES": "PL"}, []string{"render", "--storage-uri", "s3://b"}, 0, "name: carbon-forecaster-pl"},
		{"deploy", map[string]string{"CARBONGATE_STORE": "postgres://secret", "CARBONGATE_IMAGE": "example.org/ctl:1"}, []string{"render", "--backfill", "--zones", "DE", "--from", "2021-01-01", "--to", "2021-01-02"}, 0, "example.org/ctl:1"},
		{"registry", map[string]string{"CARBONGATE_REGISTRY": filepath.Join(dir, "m.db")}, []string{"migrate"}, 0, "registry schema ready"},
		{"register", map[string]string{"CARBONGATE_ZONE": "D E"}, []string{"--model-dir", dir}, 2, "--zone"},
		{"promote", map[string]string{"CARBONGATE_ALIAS": "Bad Alias"}, []string{"--zone", "DE", "--version", "1"}, 2, "--alias"},
		{"backfill", map[string]string{"CARBONGATE_STORE": "mysql://x"}, []string{"--zones", "DE", "--from", "2021-01-01", "--to", "2021-01-02"}, 2, "--store"},
		{"schedule", map[string]string{"CARBONGATE_URL": "http://127.0.0.1:1"}, []string{"--zones", "DE", "--duration", "1h"}, 1, "carbongate at http://127.0.0.1:1"},
		{"schedule", map[string]string{"CARBONGATE_URL": "http://127.0.0.1:1"}, []string{"--url", "http://127.0.0.1:2", "--zones", "DE", "--duration", "1h"}, 1, "carbongate at http://127.0.0.1:2"},
		{"forecast", map[string]string{"CARBONGATE_TIMEOUT": "0s"}, []string{"--zone", "DE"}, 2, "--timeout must be positive"},
		{"forecast", map[string]string{"CARBONGATE_TIMEOUT": "soon"}, []string{"--zone", "DE"}, 2, `$CARBONGATE_TIMEOUT: invalid value "soon" for --timeout`},
		{"report", map[string]string{"CARBONGATE_OUTPUT": "xml"}, []string{"--kubeconfig", "k", "--data", "bundled"}, 2, `--output "xml"`},
		{"regions", map[string]string{"CARBONGATE_PROVIDER": "oci"}, nil, 0, "oracle: 27 regions"},
	} {
		for k, v := range c.env {
			t.Setenv(k, v)
		}
		tested[c.cmd] = true
		code, out, errOut := runCtl(t, append([]string{c.cmd}, c.args...)...)
		got := errOut
		if c.code == 0 {
			got = out
		}
		if code != c.code || !strings.Contains(got, c.want) {
			t.Errorf("%s with %v: exit %d\nstdout %s\nstderr %s\nwant exit %d and %q", c.cmd, c.env, code, out, errOut, c.code, c.want)
		}
		if strings.Contains(out, "postgres://secret") {
			t.Errorf("%s: $CARBONGATE_STORE was rendered into the manifest", c.cmd)
		}
		for k := range c.env {
			os.Unsetenv(k)
		}
	}
	for name := range commands() {
		if !tested[name] {
			t.Errorf("no case sets a variable of %s", name)
		}
	}
}
