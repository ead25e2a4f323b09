// Package cli is the command-line convention of carbongate's binaries
// (carbonctl and its subcommands, carbongate, carbonserve): one FlagSet
// whose -h/--help prints the usage to stdout, whose every flag can also be
// set by an environment variable CARBONGATE_<NAME>, whose errors are usage
// errors (exit 2), and whose flag tables generate shell completion.
//
// Exit codes: 0 success or help, 1 failure, 2 usage error (a flag or
// environment variable with a bad value, an unknown flag or command),
// 3 a command's condition said no (carbonctl schedule --run-now-below,
// carbonctl promote --if-better).
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"sort"
	"strings"

	"github.com/carbongate/carbongate/forecast"
)

// EnvPrefix starts the environment variable of every flag.
const EnvPrefix = "CARBONGATE_"

// EnvName is the environment variable of a flag: CARBONGATE_ and the
// flag's name in upper case, '-' as '_' (--registry-token:
// CARBONGATE_REGISTRY_TOKEN).
func EnvName(flagName string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// reserved are variables of the same prefix that mean something else: the
// test harness (make test) exports them to processes that start the
// binaries, so no flag may map onto one.
var reserved = []string{"PG_BIN", "CRATEDB_HOME", "CRATEDB_TARBALL", "CRATEDB_JAVA_HOME", "OPA", "CCF",
	"PODMAN", "PROMTOOL", "TOOLS", "EXPORTER_SRC", "EMBEDDED_KILL_CHILD", "HELD_WORKLOADS",
	"APISERVER_CREATES", "LOAD_SECONDS", "LOAD_RATE"}

// Reserved reports whether env is a variable no flag may use: one the
// test harness sets (CARBONGATE_PG_BIN, CARBONGATE_OPA,
// CARBONGATE_VENV_*, …).
func Reserved(env string) bool {
	name, ok := strings.CutPrefix(env, EnvPrefix)
	if !ok {
		return false
	}
	if strings.HasPrefix(name, "VENV_") {
		return true
	}
	for _, r := range reserved {
		if name == r {
			return true
		}
	}
	return false
}

// FlagSet is a flag.FlagSet with the conventions: Parse prints the usage
// to Stdout on -h or --help and returns flag.ErrHelp (exit 0), returns
// other command-line errors as usage errors (exit 2) without printing
// them, and then sets each flag not on the command line from its
// environment variable.
type FlagSet struct {
	*flag.FlagSet
	// Intro is printed before the flags in the usage; default
	// "usage: NAME [flags]".
	Intro string
	// Stdout receives the usage on -h; a *Collector records the FlagSet
	// instead.
	Stdout io.Writer
	// Getenv reads the environment (default os.Getenv).
	Getenv func(string) string
}

// aliasUsage starts the usage of an old flag name.
const aliasUsage = "old name of --"

// Alias declares old as another name of fs's defined flag name (kept for
// scripts written before a rename): it sets the same value, and has no
// environment variable of its own.
func Alias(fs *flag.FlagSet, old, name string) {
	fs.Var(fs.Lookup(name).Value, old, aliasUsage+name)
}

// aliasOf returns the flag f is an old name of, or "".
func aliasOf(f *flag.Flag) string {
	name, _ := strings.CutPrefix(f.Usage, aliasUsage)
	if name == f.Usage {
		return ""
	}
	return name
}

// Alias is Alias on fs.
func (fs *FlagSet) Alias(old, name string) { Alias(fs.FlagSet, old, name) }

// NewFlagSet returns a FlagSet named name (the command as typed, e.g.
// "carbonctl train") writing its usage to stdout.
func NewFlagSet(name string, stdout io.Writer) *FlagSet {
	return Wrap(flag.NewFlagSet(name, flag.ContinueOnError), stdout)
}

// Wrap gives fs the conventions; fs must be ContinueOnError.
func Wrap(fs *flag.FlagSet, stdout io.Writer) *FlagSet {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &FlagSet{FlagSet: fs, Stdout: stdout, Getenv: os.Getenv}
}

// Parse parses args, then applies the environment to the flags args did
// not set. An environment variable with a bad value is a usage error
// naming the variable.
func (fs *FlagSet) Parse(args []string) error {
	if err := fs.FlagSet.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			if c, ok := fs.Stdout.(*Collector); ok {
				c.Sets = append(c.Sets, fs)
			} else {
				fs.PrintUsage(fs.Stdout)
			}
			return flag.ErrHelp
		}
		return UsageError{flagMessage(err.Error())}
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name], given[aliasOf(f)] = true, true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || given[f.Name] || aliasOf(f) != "" {
			return
		}
		env := EnvName(f.Name)
		v := fs.Getenv(env)
		if v == "" {
			return
		}
		if serr := fs.Set(f.Name, v); serr != nil {
			err = Usagef("$%s: invalid value %q for --%s: %v", env, v, f.Name, serr)
		}
	})
	return err
}

// flagMessage rewrites the flag package's messages to name flags as they
// are documented: --name, not -name.
func flagMessage(msg string) string {
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return "unknown flag --" + strings.TrimPrefix(name, "-")
	}
	for _, p := range []string{"flag needs an argument: -", " for flag -", " for -"} {
		if i := strings.Index(msg, p); i >= 0 {
			return msg[:i] + strings.TrimSuffix(p, "-") + "--" + strings.TrimPrefix(msg[i+len(p):], "-")
		}
	}
	return msg
}

// PrintUsage writes the usage: Intro, then every flag with its type,
// meaning, default and environment variable.
func (fs *FlagSet) PrintUsage(w io.Writer) {
	intro := fs.Intro
	if intro == "" {
		intro = "usage: " + fs.Name() + " [flags]\n"
	}
	fmt.Fprint(w, intro)
	if !strings.HasSuffix(intro, "\n") {
		fmt.Fprintln(w)
	}
	if Names(fs.FlagSet) == nil {
		return
	}
	fmt.Fprintln(w, "\nflags (each also set by the environment variable shown, when not on the command line):")
	fs.VisitAll(func(f *flag.Flag) {
		kind, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if kind != "" {
			line += " " + kind
		}
		fmt.Fprintf(w, "%s\n      %s", line, strings.ReplaceAll(usage, "\n", "\n      "))
		if !isZeroDefault(f) {
			if fmt.Sprintf("%T", f.Value) == "*flag.stringValue" {
				fmt.Fprintf(w, " (default %q)", f.DefValue)
			} else {
				fmt.Fprintf(w, " (default %v)", f.DefValue)
			}
		}
		if aliasOf(f) == "" {
			fmt.Fprintf(w, "\n      env %s", EnvName(f.Name))
		}
		fmt.Fprintln(w)
	})
	fmt.Fprintln(w, "\n-h, --help prints this help. Exit codes: 0 success, 1 failure, 2 usage error.")
}

// isZeroDefault reports whether f's default is its type's zero value, as
// flag.PrintDefaults decides it.
func isZeroDefault(f *flag.Flag) bool {
	t := reflect.TypeOf(f.Value)
	var z reflect.Value
	if t.Kind() == reflect.Pointer {
		z = reflect.New(t.Elem())
	} else {
		z = reflect.Zero(t)
	}
	if v, ok := z.Interface().(flag.Value); ok && f.DefValue == v.String() {
		return true
	}
	switch f.DefValue {
	case "", "false", "0", "<nil>":
		return true
	}
	return false
}

// Collector, given as a FlagSet's Stdout, records the FlagSet on -h
// instead of printing its usage: how a command's flags are listed (for
// completion and tests) from the same code that defines them.
type Collector struct{ Sets []*FlagSet }

// Write discards what a command prints besides its usage.
func (c *Collector) Write(p []byte) (int, error) { return len(p), nil }

// IsBool reports whether f takes no value (--name alone sets it).
func IsBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// Names returns the names of the flags of fs, sorted.
func Names(fs *flag.FlagSet) []string {
	var out []string
	fs.VisitAll(func(f *flag.Flag) { out = append(out, f.Name) })
	sort.Strings(out)
	return out
}

// UsageError is an error in the command line or its environment: exit 2.
type UsageError struct{ Msg string }

func (e UsageError) Error() string { return e.Msg }

// Usagef returns a UsageError.
func Usagef(format string, args ...any) error { return UsageError{fmt.Sprintf(format, args...)} }

// IsUsage reports whether err is a usage error or a help request.
func IsUsage(err error) bool {
	var u UsageError
	return errors.As(err, &u) || errors.Is(err, flag.ErrHelp)
}

// ExitError is an outcome that is not a failure but exits with Code (3:
// a command's condition said no).
type ExitError struct {
	Code int
	Msg  string
}

func (e ExitError) Error() string { return e.Msg }

// ExitDeclined is the exit code of a command whose condition said no:
// schedule --run-now-below (do not run now), promote --if-better (the
// challenger did not win).
const ExitDeclined = 3

// ExitCode is the process exit code of err: 0 for nil or help, the code of
// an ExitError, 2 for usage errors, else 1.
func ExitCode(err error) int {
	var ee ExitError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ee):
		return ee.Code
	case IsUsage(err):
		return 2
	}
	return 1
}

// Message is err as a person reads it: the machine codes of
// *forecast.Error values in its chain (EINVALID, ENOTFOUND, …) are left
// out, their fields and messages kept.
func Message(err error) string {
	msg := err.Error()
	for e := err; e != nil; e = errors.Unwrap(e) {
		fe, ok := e.(*forecast.Error)
		if !ok {
			continue
		}
		human := fe.Message
		if fe.Field != "" && !strings.Contains(human, fe.Field) {
			human = fe.Field + ": " + human
		}
		if fe.Err != nil {
			human += ": " + Message(fe.Err)
		}
		return strings.Replace(msg, fe.Error(), human, 1)
	}
	return msg
}
