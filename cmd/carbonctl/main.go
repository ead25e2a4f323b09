// Command carbonctl is carbongate's operator CLI: ingest, train, backfill,
// evaluate, deploy, the registry commands register, promote and registry
// migrate, the client commands schedule and forecast, and regions (the
// region table it is built with).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"

	"github.com/carbongate/carbongate/cmd/internal/cli"
	"github.com/carbongate/carbongate/cmd/internal/version"
)

// command is one carbonctl subcommand.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
	// subcommands are the words that may follow the command; helpArgs
	// are the arguments that ask each of its FlagSets for help (default
	// -h alone).
	subcommands []string
	helpArgs    [][]string
	// modes are boolean flags read before parsing that select another
	// FlagSet (deploy render --backfill).
	modes []string
}

func commands() map[string]command {
	return map[string]command{
		"ingest":   {summary: "check and normalise carbon-intensity CSV files into a data directory", run: runIngest},
		"train":    {summary: "train per-zone and generic models on data before a cut-off", run: runTrain},
		"evaluate": {summary: "score forecasts (the forecast store, or an in-process backtest): MAPE/MAE per lead day, intervals, PNG plots", run: runEvaluate},
		"deploy": {summary: "render KServe manifests for carbonserve, a backfill Job or the admission webhook's configuration", run: runDeploy,
			subcommands: []string{"render"}, helpArgs: [][]string{{"render", "-h"}, {"render", "--backfill", "-h"}, {"render", "--webhook", "-h"}},
			modes: []string{"backfill", "webhook"}},
		"registry": {summary: "registry administration: migrate (create MLflow's tables when absent)", run: runRegistry,
			subcommands: []string{"migrate"}, helpArgs: [][]string{{"migrate", "-h"}}},
		"register": {summary: "store a model directory's files (S3 or local) and register it as a new version", run: runRegister},
		"promote":  {summary: "point an alias (champion by default) at a version: what serves changes live (--if-better exits 3 when it declines)", run: runPromote},
		"backfill": {summary: "issue forecasts over a past range as they would have been issued and write them to the forecast store", run: runBackfill},
		"schedule": {summary: "ask a carbongate where and when to run a job (table or JSON; --run-now-below gates a CI job by exit code)", run: runSchedule},
		"forecast": {summary: "print a carbongate's current forecast of a zone (table or JSON)", run: runForecast},
		"report":   {summary: "the ledger of held workloads: grams promised (forecast) and realized (observed) per workload and per namespace and zone (CSV or JSON)", run: runReport},
		"regions":  {summary: "list the cloud regions carbonctl knows per provider: zone, bundled zone data, place (table or JSON; reads no server)", run: runRegions},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Main runs carbonctl with args and returns the process exit code: 0 on
// success or help, 1 for failures, 2 for usage errors, 3 when schedule
// --run-now-below says not to run now or promote --if-better declines.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmds := commands()
	if len(args) == 0 {
		usage(stderr, cmds)
		return 2
	}
	switch args[0] {
	case "-h", "--help":
		usage(stdout, cmds)
		return 0
	case "help":
		if len(args) == 1 {
			usage(stdout, cmds)
			return 0
		}
		if _, ok := cmds[args[1]]; ok || args[1] == "completion" {
			return Main(ctx, []string{args[1], "-h"}, stdout, stderr)
		}
		fmt.Fprintf(stderr, "carbonctl help: unknown command %q: 'carbonctl help' lists them\n", args[1])
		return 2
	case "completion":
		return report(stderr, "completion", runCompletion(args[1:], stdout, cmds))
	}
	if version.Requested(args) || args[0] == "version" {
		fmt.Fprintln(stdout, version.Get().String("carbonctl"))
		return 0
	}
	c, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "carbonctl: unknown command %q: 'carbonctl help' lists them\n", args[0])
		return 2
	}
	return report(stderr, args[0], c.run(ctx, args[1:], stdout, stderr))
}

// report prints err of command name on stderr and returns the exit code.
func report(stderr io.Writer, name string, err error) int {
	code := cli.ExitCode(err)
	if code == 0 {
		return 0
	}
	fmt.Fprintf(stderr, "carbonctl %s: %s\n", name, cli.Message(err))
	if code == 2 {
		fmt.Fprintf(stderr, "'carbonctl help %s' shows the flags\n", name)
	}
	return code
}

func usage(w io.Writer, cmds map[string]command) {
	fmt.Fprintln(w, "usage: carbonctl <command> [flags]\n\ncommands:")
	for _, n := range sortedNames(cmds) {
		fmt.Fprintf(w, "  %-10s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintf(w, "  %-10s %s\n", "completion", "print the shell completion script: completion bash|zsh|fish")
	fmt.Fprintln(w, "\nRun 'carbonctl help <command>' for the flags of one command; 'carbonctl --version' for the build.")
	fmt.Fprintln(w, "Every flag can also be set by the environment variable CARBONGATE_<FLAG> (upper case, - as _),")
	fmt.Fprintln(w, "used when the flag is not on the command line.")
	fmt.Fprintln(w, "Exit codes: 0 success, 1 failure, 2 usage error, 3 the condition said no (schedule --run-now-below, promote --if-better).")
}

// flagSets returns the FlagSets of a command, as its help requests
// define them.
func (c command) flagSets(ctx context.Context) []*cli.FlagSet {
	helps := c.helpArgs
	if helps == nil {
		helps = [][]string{{"-h"}}
	}
	col := &cli.Collector{}
	for _, h := range helps {
		_ = c.run(ctx, h, col, io.Discard)
	}
	return col.Sets
}

// runCompletion prints the completion script of a shell, generated from
// the command table and each command's flags.
func runCompletion(args []string, stdout io.Writer, cmds map[string]command) error {
	fs := cli.NewFlagSet("carbonctl completion", stdout)
	fs.Intro = "usage: carbonctl completion bash|zsh|fish\n\nprints the shell completion script, e.g.\n  source <(carbonctl completion bash)\n  carbonctl completion zsh > \"${fpath[1]}/_carbonctl\"\n  carbonctl completion fish > ~/.config/fish/completions/carbonctl.fish\n"
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("want one shell: bash, zsh or fish")
	}
	var table []cli.Command
	for name, c := range cmds {
		cc := cli.Command{Name: name, Summary: c.summary, Subcommands: c.subcommands}
		for _, fs := range c.flagSets(context.Background()) {
			cc.Flags = append(cc.Flags, fs.FlagSet)
		}
		if len(c.modes) > 0 {
			modes := flag.NewFlagSet(name, flag.ContinueOnError)
			for _, m := range c.modes {
				modes.Bool(m, false, "render another kind of manifest")
			}
			cc.Flags = append(cc.Flags, modes)
		}
		table = append(table, cc)
	}
	table = append(table,
		cli.Command{Name: "help", Summary: "show the help of a command", Subcommands: append(sortedNames(cmds), "completion")},
		cli.Command{Name: "completion", Summary: "print the shell completion script", Subcommands: cli.Shells},
		cli.Command{Name: "version", Summary: "print the build"})
	return cli.Completion(stdout, fs.Arg(0), "carbonctl", table)
}

func sortedNames(cmds map[string]command) []string {
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
