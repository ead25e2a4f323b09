package main

import (
	"context"
	"io"
)

// runIngest is being written; see the foundation issue.
func runIngest(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return usagef("ingest: not implemented yet")
}
