// Package daemon is the process skeleton shared by carbongate's servers
// (carbongate, carbonserve): parse flags, run until SIGINT/SIGTERM or until
// the server stops on its own, then drain and close, with the exit codes
// 0 (clean or -h, the help on stdout), 1 (failure) and 2 (usage: a flag,
// its CARBONGATE_* variable or an argument; package cli).
package daemon

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/carbongate/carbongate/cmd/internal/cli"
	"github.com/carbongate/carbongate/cmd/internal/version"
)

// Program is a server with the Main shape: ParseFlags, Run (returns once
// serving), Done (reports a server that stopped on its own), Close (drains
// and shuts down).
type Program interface {
	ParseFlags(args []string) error
	Run(ctx context.Context) error
	Done() <-chan error
	Close() error
}

// Main runs p with args and returns the exit code. name prefixes errors on
// stderr; logger returns p's logger once Run has succeeded.
func Main(name string, p Program, args []string, stderr io.Writer, logger func() *slog.Logger) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := p.ParseFlags(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "%s: %s\n", name, cli.Message(err))
		return 2
	}
	if err := p.Run(ctx); err != nil {
		fmt.Fprintf(stderr, "%s: %s\n", name, cli.Message(err))
		return 1
	}
	code := 0
	select {
	case <-ctx.Done():
	case err := <-p.Done():
		logger().Error("server stopped", "error", err)
		code = 1
	}
	stop()
	if err := p.Close(); err != nil {
		logger().Error("shutdown", "error", err)
		code = 1
	}
	return code
}

// Exit runs Main with the process's arguments and exits with its code;
// --version prints the build (package version) instead.
func Exit(name string, p Program, logger func() *slog.Logger) {
	if version.Requested(os.Args[1:]) {
		fmt.Println(version.Get().String(name))
		os.Exit(0)
	}
	os.Exit(Main(name, p, os.Args[1:], os.Stderr, logger))
}

// NewLogger returns the JSON logger of a binary: durations are written as
// Go duration strings ("1.5s"), not as integer nanoseconds.
func NewLogger(w io.Writer, level slog.Leveler) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Value.Kind() == slog.KindDuration {
				a.Value = slog.StringValue(a.Value.Duration().String())
			}
			return a
		}}))
}
