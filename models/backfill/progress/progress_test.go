package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/test/testsupport"
)

func TestLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		note string
		s    Snapshot
		want string
	}{
		{"running", Snapshot{Units: 1234, Total: 4380, Rows: 118464, Elapsed: 1300 * time.Millisecond}, "backfill: 1234/4380 units, 118464 rows, 949 units/s, eta 3s"},
		{"nothing yet", Snapshot{Total: 10}, "backfill: 0/10 units, 0 rows, 0 units/s, eta ?"},
		{"under a second left", Snapshot{Units: 99, Total: 100, Rows: 9504, Elapsed: time.Second}, "backfill: 99/100 units, 9504 rows, 99 units/s, eta 1s"},
		{"done", Snapshot{Units: 10, Total: 10, Rows: 960, Elapsed: 2 * time.Second}, "backfill: 10/10 units, 960 rows, 5 units/s, eta 0s"},
	}
	for _, tt := range tests {
		t.Run(tt.note, func(t *testing.T) {
			t.Parallel()
			if got := Line(tt.s); got != tt.want {
				t.Errorf("Line=%q, want %q", got, tt.want)
			}
		})
	}
}

func TestSummaryLine(t *testing.T) {
	t.Parallel()
	got := SummaryLine(Summary{Written: 4380, Skipped: 12, Failed: 1, Resumed: 7, Rows: 420480, Elapsed: 3200 * time.Millisecond})
	want := "backfill: 4380 units written, 12 skipped, 1 failed, 7 already done; 420480 rows in 3.2s, 131400 rows/s"
	if got != want {
		t.Errorf("SummaryLine=%q, want %q", got, want)
	}
}

func TestPlainPrintsLines(t *testing.T) {
	t.Parallel()
	var out testsupport.SyncBuffer
	p := &Plain{W: &out, Interval: 10 * time.Millisecond}
	p.Start(4)
	p.Add(2, 192)
	for deadline := time.Now().Add(10 * time.Second); out.String() == ""; {
		if time.Now().After(deadline) {
			t.Fatal("no periodic line within 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	p.Add(2, 192)
	p.Finish()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) < 2 {
		t.Fatalf("want periodic lines and a last one, got:\n%s", out.String())
	}
	if !strings.HasPrefix(lines[0], "backfill: 2/4 units, 192 rows, ") {
		t.Errorf("first line %q", lines[0])
	}
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "backfill: 4/4 units, 384 rows, ") || !strings.HasSuffix(last, "eta 0s") {
		t.Errorf("last line %q", last)
	}
}

func TestBarWritesProgress(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	r := New(&out, true, time.Second)
	r.Start(10)
	r.Add(10, 960)
	r.Finish()
	if s := out.String(); !strings.Contains(s, "backfill") || !strings.Contains(s, "10/10") {
		t.Errorf("bar output lacks the description or count:\n%q", s)
	}
}
