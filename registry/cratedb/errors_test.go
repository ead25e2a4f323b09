package cratedb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/carbongate/carbongate/forecast"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		code string
		hint bool // message carries MigrateHint
	}{
		{"duplicate, exception name", duplicate(), forecast.ECONFLICT, false},
		{"duplicate, bare message (PG wire)", pgErr("XX000", "A document with the same primary key exists already"), forecast.ECONFLICT, false},
		{"duplicate, colon form", pgErr("XX000", "DuplicateKeyException: A document with the same primary key exists already"), forecast.ECONFLICT, false},
		{"duplicate, SQLSTATE 23505", pgErr("23505", "unique_violation"), forecast.ECONFLICT, false},
		{"relation unknown, message", pgErr("XX000", "Relation 'model_versions' unknown"), forecast.ENOTFOUND, true},
		{"relation unknown, exception name", pgErr("XX000", "RelationUnknown[Relation 'doc.model_versions' unknown]"), forecast.ENOTFOUND, true},
		{"relation unknown, SQLSTATE 42P01", pgErr("42P01", "whatever"), forecast.ENOTFOUND, true},
		{"schema unknown", pgErr("XX000", "Schema 'mlflow' unknown"), forecast.ENOTFOUND, true},
		{"SchemaUnknownException", pgErr("XX000", "SchemaUnknownException[Schema 'mlflow' unknown]"), forecast.ENOTFOUND, true},
		{"shards unavailable", pgErr("XX000", "UnavailableShardsException[[model_versions][0] primary shard is not active]"), forecast.EUNAVAILABLE, false},
		{"shard recovering after a restart", pgErr("XX000", "[doc.registered_model_aliases] shard 1 is not available"), forecast.EUNAVAILABLE, false},
		{"shard not started after a restart", pgErr("XX000", "no such shard"), forecast.EUNAVAILABLE, false},
		{"cluster block", pgErr("XX000", "ClusterBlockException[blocked by: [SERVICE_UNAVAILABLE/1/state not recovered]]"), forecast.EUNAVAILABLE, false},
		{"connection", fmt.Errorf("%w: %w", ErrUnavailable, io.EOF), forecast.EUNAVAILABLE, false},
		{"syntax error", pgErr("XX000", "SQLParseException[line 1:8: mismatched input]"), forecast.EINTERNAL, false},
		{"client error", errors.New("unable to encode"), forecast.EINTERNAL, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := classify(context.Background(), "op", tc.err)
			if got := forecast.ErrorCode(err); got != tc.code {
				t.Fatalf("code %q, want %q (%v)", got, tc.code, err)
			}
			if !errors.Is(err, tc.err) {
				t.Errorf("cause lost: %v", err)
			}
			if got := strings.Contains(forecast.ErrorMessage(err), MigrateHint); got != tc.hint {
				t.Errorf("hint in %q: %v, want %v", forecast.ErrorMessage(err), got, tc.hint)
			}
		})
	}
}

func TestClassifyContext(t *testing.T) {
	t.Parallel()
	err := classify(context.Background(), "op", fmt.Errorf("timeout: %w", context.DeadlineExceeded))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%v: want context.DeadlineExceeded in the chain", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = classify(ctx, "op", errors.New("conn closed"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("%v: want context.Canceled in the chain", err)
	}
}

func TestMarkUnavailable(t *testing.T) {
	t.Parallel()
	server := pgErr("XX000", "A document with the same primary key exists already")
	tests := []struct {
		name        string
		err         error
		unavailable bool
	}{
		{"server error", server, false},
		{"wrapped server error", fmt.Errorf("exec: %w", server), false},
		{"refused", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, true},
		{"eof", io.ErrUnexpectedEOF, true},
		{"closed", net.ErrClosed, true},
		{"context", context.DeadlineExceeded, false},
		{"encode", errors.New("cannot encode"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := markUnavailable(tc.err)
			if got := errors.Is(err, ErrUnavailable); got != tc.unavailable {
				t.Fatalf("unavailable=%v, want %v (%v)", got, tc.unavailable, err)
			}
			if !errors.Is(err, tc.err) {
				t.Errorf("cause lost: %v", err)
			}
		})
	}
	if markUnavailable(nil) != nil {
		t.Error("nil error became non-nil")
	}
}
