package daemon

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// fake is a Program whose steps fail on request.
type fake struct {
	parseErr, runErr, stopped, closeErr error
	closed                              bool
}

func (f *fake) ParseFlags([]string) error { return f.parseErr }
func (f *fake) Run(context.Context) error { return f.runErr }
func (f *fake) Close() error              { f.closed = true; return f.closeErr }
func (f *fake) Done() <-chan error {
	ch := make(chan error, 1)
	ch <- f.stopped
	return ch
}

func TestExitCodes(t *testing.T) {
	for _, tt := range []struct {
		note   string
		p      *fake
		code   int
		stderr string
		log    string
		closed bool
	}{
		{"help", &fake{parseErr: flag.ErrHelp}, 0, "", "", false},
		{"usage", &fake{parseErr: errors.New("bad flag")}, 2, "srv: bad flag", "", false},
		{"run fails", &fake{runErr: errors.New("bind: in use")}, 1, "srv: bind: in use", "", false},
		{"server stops on its own", &fake{stopped: errors.New("serve: boom")}, 1, "", "server stopped", true},
		{"close fails", &fake{stopped: errors.New("x"), closeErr: errors.New("drain: timeout")}, 1, "", "shutdown", true},
	} {
		t.Run(tt.note, func(t *testing.T) {
			var stderr, logs bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logs, nil))
			code := Main("srv", tt.p, nil, &stderr, func() *slog.Logger { return log })
			if code != tt.code || !strings.Contains(stderr.String(), tt.stderr) || !strings.Contains(logs.String(), tt.log) || tt.p.closed != tt.closed {
				t.Fatalf("code %d, stderr %q, logs %q, closed %v; want %d, %q, %q, %v",
					code, stderr.String(), logs.String(), tt.p.closed, tt.code, tt.stderr, tt.log, tt.closed)
			}
		})
	}
}

func TestLoggerWritesDurations(t *testing.T) {
	var b strings.Builder
	NewLogger(&b, slog.LevelInfo).Info("x", "interval", 1500*time.Millisecond)
	if !strings.Contains(b.String(), `"interval":"1.5s"`) {
		t.Fatalf("logged %s, want the duration as 1.5s", b.String())
	}
}
