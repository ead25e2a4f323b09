package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// usageError marks an error caused by the command line itself.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

func isUsage(err error) bool {
	var u usageError
	return errors.As(err, &u) || errors.Is(err, flag.ErrHelp)
}

// newFlags returns a FlagSet that reports errors instead of exiting.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("carbonctl "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}
