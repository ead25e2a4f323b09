// Package progress reports a backfill's progress: a progress bar (items,
// rate, ETA) on a terminal, plain lines every few seconds otherwise, and a
// summary line at the end.
package progress

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

// Snapshot is the progress at one moment.
type Snapshot struct {
	Units, Total int // units finished and to do
	Rows         int // rows written
	Elapsed      time.Duration
}

// Line formats s as one plain progress line:
//
//	backfill: 1234/4380 units, 118000 rows, 950 units/s, eta 3s
//
// The rate is over the elapsed time; the ETA is the remaining units at that
// rate, rounded up to the second ("eta ?" before the first unit).
func Line(s Snapshot) string {
	rate := 0.0
	if secs := s.Elapsed.Seconds(); secs > 0 {
		rate = float64(s.Units) / secs
	}
	eta := "?"
	if rate > 0 {
		d := time.Duration(float64(s.Total-s.Units) / rate * float64(time.Second))
		eta = d.Round(time.Second).String()
		if d > 0 && d < time.Second {
			eta = "1s"
		}
	}
	return fmt.Sprintf("backfill: %d/%d units, %d rows, %.0f units/s, eta %s", s.Units, s.Total, s.Rows, rate, eta)
}

// Summary is the outcome of a run.
type Summary struct {
	Written, Skipped, Failed, Resumed int
	Rows                              int
	Elapsed                           time.Duration
}

// SummaryLine formats the final line:
//
//	backfill: 4380 units written, 12 skipped, 0 failed, 0 already done; 420480 rows in 3.2s, 131400 rows/s
func SummaryLine(s Summary) string {
	rate := 0.0
	if secs := s.Elapsed.Seconds(); secs > 0 {
		rate = float64(s.Rows) / secs
	}
	return fmt.Sprintf("backfill: %d units written, %d skipped, %d failed, %d already done; %d rows in %s, %.0f rows/s",
		s.Written, s.Skipped, s.Failed, s.Resumed, s.Rows, s.Elapsed.Round(time.Millisecond), rate)
}

// Reporter receives progress. Start is called once before Add; Finish
// once at the end. Safe for use from one goroutine at a time.
type Reporter interface {
	Start(total int)
	Add(units, rows int)
	Finish()
}

// IsTerminal reports whether f is a character device (a terminal).
func IsTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// New returns a Bar writing to w when terminal is set, else a Plain
// reporter printing a Line every interval.
func New(w io.Writer, terminal bool, interval time.Duration) Reporter {
	if terminal {
		return &Bar{w: w}
	}
	return &Plain{W: w, Interval: interval}
}

// Bar is a progress bar of units with rate and ETA.
type Bar struct {
	w    io.Writer
	bar  *progressbar.ProgressBar
	rows int
}

// Start implements Reporter.
func (b *Bar) Start(total int) {
	b.bar = progressbar.NewOptions(total,
		progressbar.OptionSetWriter(b.w),
		progressbar.OptionSetDescription("backfill"),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("units"),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionFullWidth(),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(b.w) }),
	)
}

// Add implements Reporter.
func (b *Bar) Add(units, rows int) {
	b.rows += rows
	_ = b.bar.Add(units)
}

// Finish implements Reporter.
func (b *Bar) Finish() {
	if !b.bar.IsFinished() {
		_ = b.bar.Exit()
		fmt.Fprintln(b.w)
	}
}

// Plain prints a Line every Interval (default 5 s) from its own goroutine,
// and a last one at Finish.
type Plain struct {
	W        io.Writer
	Interval time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time

	mu    sync.Mutex
	snap  Snapshot
	start time.Time
	stop  chan struct{}
	done  chan struct{}
}

// Start implements Reporter.
func (p *Plain) Start(total int) {
	if p.Now == nil {
		p.Now = time.Now
	}
	interval := p.Interval
	if interval <= 0 {
		interval = 5 * time.Second
	}
	p.start = p.Now()
	p.snap = Snapshot{Total: total}
	p.stop, p.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(p.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.print()
			}
		}
	}()
}

// Add implements Reporter.
func (p *Plain) Add(units, rows int) {
	p.mu.Lock()
	p.snap.Units += units
	p.snap.Rows += rows
	p.mu.Unlock()
}

// Finish implements Reporter: it stops the ticker and prints the last line.
func (p *Plain) Finish() {
	if p.stop == nil {
		return
	}
	close(p.stop)
	<-p.done
	p.print()
}

func (p *Plain) print() {
	p.mu.Lock()
	s := p.snap
	p.mu.Unlock()
	s.Elapsed = p.Now().Sub(p.start)
	fmt.Fprintln(p.W, Line(s))
}
