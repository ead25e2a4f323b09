package cli

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
)

func TestEnvName(t *testing.T) {
	t.Parallel()
	for flagName, want := range map[string]string{
		"registry": "CARBONGATE_REGISTRY", "registry-token": "CARBONGATE_REGISTRY_TOKEN",
		"model_dir": "CARBONGATE_MODEL_DIR", "casdk-prefix": "CARBONGATE_CASDK_PREFIX",
	} {
		if got := EnvName(flagName); got != want {
			t.Errorf("EnvName(%q) = %q, want %q", flagName, got, want)
		}
	}
	for env, want := range map[string]bool{
		"CARBONGATE_PG_BIN": true, "CARBONGATE_OPA": true, "CARBONGATE_VENV_KSERVE": true, "CARBONGATE_PROMTOOL": true,
		"CARBONGATE_REGISTRY": false, "CARBONGATE_OPA_URL": false, "PG_BIN": false,
	} {
		if got := Reserved(env); got != want {
			t.Errorf("Reserved(%q) = %v, want %v", env, got, want)
		}
	}
}

// testFlags is a FlagSet with one flag of each kind and env as its
// environment.
func testFlags(env map[string]string) (*FlagSet, *bytes.Buffer, *string, *time.Duration, *bool) {
	var out bytes.Buffer
	fs := NewFlagSet("prog sub", &out)
	fs.Getenv = func(k string) string { return env[k] }
	url := fs.String("url", "http://localhost:8080", "base `URL`")
	timeout := fs.Duration("timeout", 10*time.Second, "bound of the request")
	check := fs.Bool("check", false, "check only")
	fs.Alias("u", "url")
	return fs, &out, url, timeout, check
}

func TestParse(t *testing.T) {
	t.Parallel()
	env := map[string]string{"CARBONGATE_URL": "http://env:1", "CARBONGATE_TIMEOUT": "3s", "CARBONGATE_CHECK": "true", "CARBONGATE_U": "http://alias"}
	for _, c := range []struct {
		note    string
		args    []string
		url     string
		timeout time.Duration
		check   bool
	}{
		{"environment fills what is not given", nil, "http://env:1", 3 * time.Second, true},
		{"the command line wins", []string{"--url", "http://flag:2", "--check=false"}, "http://flag:2", 3 * time.Second, false},
		{"an old name counts as given", []string{"-u", "http://old:3"}, "http://old:3", 3 * time.Second, true},
	} {
		fs, out, url, timeout, check := testFlags(env)
		if err := fs.Parse(c.args); err != nil {
			t.Fatalf("%s: %v", c.note, err)
		}
		if *url != c.url || *timeout != c.timeout || *check != c.check || out.Len() != 0 {
			t.Errorf("%s: url %s timeout %v check %v, output %q; want %s %v %v", c.note, *url, *timeout, *check, out, c.url, c.timeout, c.check)
		}
	}

	fs, _, url, _, _ := testFlags(map[string]string{"CARBONGATE_URL": ""})
	if err := fs.Parse(nil); err != nil || *url != "http://localhost:8080" {
		t.Errorf("an empty variable is unset: url %s, %v", *url, err)
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--nope"}, nil, "unknown flag --nope"},
		{[]string{"-nope"}, nil, "unknown flag --nope"},
		{[]string{"--timeout"}, nil, "flag needs an argument: --timeout"},
		{[]string{"--timeout", "soon"}, nil, `invalid value "soon" for flag --timeout`},
		{nil, map[string]string{"CARBONGATE_TIMEOUT": "soon"}, `$CARBONGATE_TIMEOUT: invalid value "soon" for --timeout`},
		{nil, map[string]string{"CARBONGATE_CHECK": "maybe"}, `$CARBONGATE_CHECK: invalid value "maybe" for --check`},
	} {
		fs, out, _, _, _ := testFlags(c.env)
		err := fs.Parse(c.args)
		if !IsUsage(err) || ExitCode(err) != 2 || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v %v: %v (exit %d), want a usage error with %q", c.args, c.env, err, ExitCode(err), c.want)
		}
		if out.Len() != 0 {
			t.Errorf("%v: printed %q on an error", c.args, out)
		}
	}
}

func TestHelp(t *testing.T) {
	t.Parallel()
	for _, arg := range []string{"-h", "--help", "-help"} {
		fs, out, _, _, _ := testFlags(map[string]string{"CARBONGATE_TIMEOUT": "soon"})
		err := fs.Parse([]string{"--check", arg})
		if !errors.Is(err, flag.ErrHelp) || ExitCode(err) != 0 {
			t.Fatalf("%s: %v, want flag.ErrHelp", arg, err)
		}
		help := out.String()
		for _, want := range []string{"usage: prog sub [flags]", "--url URL\n", "base URL (default \"http://localhost:8080\")", "env CARBONGATE_URL",
			"--timeout duration", "(default 10s)", "env CARBONGATE_TIMEOUT", "--check\n", "env CARBONGATE_CHECK", "old name of --url"} {
			if !strings.Contains(help, want) {
				t.Errorf("%s: the help lacks %q:\n%s", arg, want, help)
			}
		}
		if strings.Contains(help, "CARBONGATE_U\n") {
			t.Errorf("an old name has a variable:\n%s", help)
		}
	}
	c := &Collector{}
	fs, _, _, _, _ := testFlags(nil)
	fs.Stdout = c
	if err := fs.Parse([]string{"-h"}); !errors.Is(err, flag.ErrHelp) || len(c.Sets) != 1 || c.Sets[0] != fs {
		t.Fatalf("collector: %v, %d sets", err, len(c.Sets))
	}
}

func TestExitCodeAndMessage(t *testing.T) {
	t.Parallel()
	nf := forecast.Errorf(forecast.ENOTFOUND, "model carbon-forecaster-DE has no version to promote")
	for _, c := range []struct {
		err  error
		code int
		msg  string
	}{
		{nil, 0, ""},
		{flag.ErrHelp, 0, ""},
		{Usagef("--zone is required"), 2, "--zone is required"},
		{ExitError{ExitDeclined, "not promoted"}, ExitDeclined, "not promoted"},
		{fmt.Errorf("--challenger: %w", nf), 1, "--challenger: model carbon-forecaster-DE has no version to promote"},
		{&forecast.Error{Code: forecast.EINVALID, Field: "version", Message: "must be a number"}, 1, "version: must be a number"},
		{&forecast.Error{Code: forecast.EUNAVAILABLE, Message: "registry down", Err: errors.New("dial tcp: refused")}, 1, "registry down: dial tcp: refused"},
	} {
		if got := ExitCode(c.err); got != c.code {
			t.Errorf("ExitCode(%v) = %d, want %d", c.err, got, c.code)
		}
		if c.err != nil && c.msg != "" {
			if got := Message(c.err); got != c.msg {
				t.Errorf("Message(%v) = %q, want %q", c.err, got, c.msg)
			}
		}
	}
}

// TestCompletion checks the scripts' syntax with each shell that is
// installed (bash always: it runs the tests' setup scripts) and that bash
// completes commands, subcommands and flags.
func TestCompletion(t *testing.T) {
	t.Parallel()
	sub := flag.NewFlagSet("render", flag.ContinueOnError)
	sub.String("zones", "", "zone ids: DE,SE (it's required)")
	sub.Bool("no-generic", false, "leave out the generic model")
	cmds := []Command{
		{Name: "deploy", Summary: "render manifests: KServe's and the webhook's", Subcommands: []string{"render"}, Flags: []*flag.FlagSet{sub}},
		{Name: "version", Summary: "print the build"},
	}
	dir := t.TempDir()
	for _, shell := range Shells {
		var b bytes.Buffer
		if err := Completion(&b, shell, "prog", cmds); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"deploy", "render", "zones", "no-generic"} {
			if !strings.Contains(b.String(), want) {
				t.Errorf("%s script lacks %q", shell, want)
			}
		}
		path := filepath.Join(dir, "prog."+shell)
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		bin, err := exec.LookPath(shell)
		if err != nil {
			if shell == "bash" {
				t.Fatal("bash is not installed")
			}
			t.Logf("%s is not installed: its script's syntax is not checked", shell)
			continue
		}
		args := []string{"-n", path}
		if shell == "fish" {
			args = []string{"--no-execute", path}
		}
		if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
			t.Errorf("%s -n: %v\n%s\n%s", shell, err, out, b.String())
		}
	}
	for _, c := range []struct {
		words string
		want  string
	}{
		{"prog d", "deploy"},
		{"prog deploy r", "render"},
		{"prog deploy render --z", "--zones"},
		{"prog deploy render --no", "--no-generic"},
	} {
		words := strings.Fields(c.words)
		script := fmt.Sprintf("source %s; COMP_WORDS=(%s); COMP_CWORD=%d; _prog; echo \"${COMPREPLY[*]}\"", filepath.Join(dir, "prog.bash"), c.words, len(words)-1)
		out, err := exec.Command("bash", "-c", script).CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != c.want {
			t.Errorf("completing %q: %q, %v; want %q", c.words, out, err, c.want)
		}
	}
	if err := Completion(&bytes.Buffer{}, "tcsh", "prog", cmds); ExitCode(err) != 2 {
		t.Errorf("tcsh: %v, want a usage error", err)
	}
}
