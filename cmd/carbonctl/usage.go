package main

import (
	"io"
	"strings"

	"github.com/carbongate/carbongate/cmd/internal/cli"
)

func usagef(format string, args ...any) error { return cli.Usagef(format, args...) }

func isUsage(err error) bool { return cli.IsUsage(err) }

// newFlags returns the FlagSet of a command (name as typed after
// carbonctl, e.g. "deploy render"): help on stdout, each flag also from
// its CARBONGATE_* variable.
func newFlags(name string, stdout io.Writer) *cli.FlagSet {
	fs := cli.NewFlagSet("carbonctl "+name, stdout)
	first, _, _ := strings.Cut(name, " ")
	if c, ok := commands()[first]; ok {
		fs.Intro = "usage: carbonctl " + name + " [flags]\n\n" + c.summary + "\n"
	}
	return fs
}
