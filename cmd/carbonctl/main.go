// Command carbonctl is carbongate's operator CLI: ingest, train, backfill,
// evaluate, deploy, the registry commands register, promote and registry
// migrate, and the client commands schedule and forecast.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"

	"github.com/carbongate/carbongate/cmd/internal/version"
)

// command is one carbonctl subcommand.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() map[string]command {
	return map[string]command{
		"ingest":   {"check and normalise carbon-intensity CSV files into a data directory", runIngest},
		"train":    {"train per-zone and generic models on data before a cut-off", runTrain},
		"evaluate": {"score forecasts (the forecast store, or an in-process backtest): MAPE/MAE per lead day, intervals, PNG plots", runEvaluate},
		"deploy":   {"render KServe manifests for carbonserve, a backfill Job or the admission webhook's configuration", runDeploy},
		"registry": {"registry administration: migrate (create MLflow's tables when absent)", runRegistry},
		"register": {"store a model directory's files (S3 or local) and register it as a new version", runRegister},
		"promote":  {"point an alias (champion by default) at a version: what serves changes live", runPromote},
		"backfill": {"issue forecasts over a past range as they would have been issued and write them to the forecast store", runBackfill},
		"schedule": {"ask a carbongate where and when to run a job (table or JSON; --run-now-below gates a CI job by exit code)", runSchedule},
		"forecast": {"print a carbongate's current forecast of a zone (table or JSON)", runForecast},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Main runs carbonctl with args and returns the process exit code: 0 on
// success, 2 for usage errors, 1 for failures, 3 when schedule
// --run-now-below says not to run now.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmds := commands()
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr, cmds)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if version.Requested(args) || args[0] == "version" {
		fmt.Fprintln(stdout, version.Get().String("carbonctl"))
		return 0
	}
	c, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "carbonctl: unknown command %q\n", args[0])
		usage(stderr, cmds)
		return 2
	}
	if err := c.run(ctx, args[1:], stdout, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		var ec exitCode
		if errors.As(err, &ec) {
			fmt.Fprintf(stderr, "carbonctl %s: %s\n", args[0], ec.msg)
			return ec.code
		}
		fmt.Fprintf(stderr, "carbonctl %s: %v\n", args[0], err)
		if isUsage(err) {
			return 2
		}
		return 1
	}
	return 0
}

func usage(w io.Writer, cmds map[string]command) {
	fmt.Fprintln(w, "usage: carbonctl <command> [flags]\n\ncommands:")
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'carbonctl <command> -h' for the flags of one command; 'carbonctl --version' for the build.")
}
