package main

import (
	"context"
	"io"
)

// runEvaluate is being written; see the foundation issue.
func runEvaluate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return usagef("evaluate: not implemented yet")
}
