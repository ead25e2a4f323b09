package main

import (
	"context"
	"io"
)

// runTrain is being written; see the foundation issue.
func runTrain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return usagef("train: not implemented yet")
}
