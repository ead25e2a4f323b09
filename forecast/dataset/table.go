package dataset

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/carbongate/carbongate/forecast"
)

// Table is the hourly series of one zone: Direct[i], Lifecycle[i] and every
// Sources[k][i] belong to the hour starting at Start + i hours. All slices
// have the same length, hold no NaN, Inf or negative value, and Start is UTC
// and hour-aligned. Tables returned by this package are not modified after
// they are returned; callers that share a Table must not modify it either.
type Table struct {
	Zone      forecast.Zone
	Start     time.Time            // UTC, hour-aligned, first hour
	Direct    []float64            // gCO2eq/kWh, one per hour
	Lifecycle []float64            // gCO2eq/kWh, one per hour
	Sources   map[string][]float64 // generation per source in MWh, keyed without the _mwh suffix; may be empty
}

// Len returns the number of hours.
func (t *Table) Len() int { return len(t.Direct) }

// End returns the end of the last hour (exclusive).
func (t *Table) End() time.Time { return t.Start.Add(time.Duration(len(t.Direct)) * forecast.Hour) }

// Series returns one signal of t as a Series sharing t's values (not a copy).
// The empty signal is lifecycle, the default; an unknown signal yields an
// empty Series starting at t.Start.
func (t *Table) Series(sig forecast.Signal) forecast.Series {
	switch sig {
	case forecast.SignalDirect:
		return forecast.Series{Start: t.Start, Values: t.Direct}
	case forecast.SignalLifecycle, "":
		return forecast.Series{Start: t.Start, Values: t.Lifecycle}
	}
	return forecast.Series{Start: t.Start}
}

// SourceNames returns the keys of Sources in sorted order.
func (t *Table) SourceNames() []string { return slices.Sorted(maps.Keys(t.Sources)) }

// WriteCSV writes t in layout A: datetime_utc,ci_direct,ci_lifecycle, then
// one <source>_mwh column per source in SourceNames order, times as
// 2006-01-02T15:04:05Z, numbers in the shortest form that reads back
// exactly. Reading the output back yields an identical Table (given the same
// zone).
func (t *Table) WriteCSV(w io.Writer) error {
	names := t.SourceNames()
	bw := bufio.NewWriterSize(w, 64<<10)
	cw := csv.NewWriter(bw)
	rec := make([]string, 0, 3+len(names))
	rec = append(rec, colTime, colDirect, colLifecycle)
	for _, n := range names {
		rec = append(rec, n+sourceSuffix)
	}
	if err := cw.Write(rec); err != nil {
		return err
	}
	var num []byte
	for i := range t.Direct {
		rec = rec[:0]
		rec = append(rec, t.Start.Add(time.Duration(i)*forecast.Hour).Format(timeLayoutOut))
		num = strconv.AppendFloat(num[:0], t.Direct[i], 'f', -1, 64)
		rec = append(rec, string(num))
		num = strconv.AppendFloat(num[:0], t.Lifecycle[i], 'f', -1, 64)
		rec = append(rec, string(num))
		for _, n := range names {
			num = strconv.AppendFloat(num[:0], t.Sources[n][i], 'f', -1, 64)
			rec = append(rec, string(num))
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return err
	}
	return bw.Flush()
}

// Severities of an Issue.
const (
	SeverityError   = "error"   // the data cannot be used; the load fails
	SeverityWarning = "warning" // the data was repaired by a documented rule
)

// Issue is one finding about the input. Line is the 1-based line in File
// (the header is line 1), or 0 when the issue concerns the whole file.
type Issue struct {
	File     string
	Line     int
	Severity string // SeverityError or SeverityWarning
	Message  string
}

// String formats the issue as "file:line: severity: message" (without
// ":line" when Line is 0).
func (i Issue) String() string {
	if i.Line > 0 {
		return fmt.Sprintf("%s:%d: %s: %s", i.File, i.Line, i.Severity, i.Message)
	}
	return fmt.Sprintf("%s: %s: %s", i.File, i.Severity, i.Message)
}

// collector gathers issues in the order they are found.
type collector struct {
	list []Issue
	errs int
}

func (c *collector) errorf(file string, line int, format string, args ...any) {
	c.list = append(c.list, Issue{File: file, Line: line, Severity: SeverityError, Message: fmt.Sprintf(format, args...)})
	c.errs++
}

func (c *collector) warnf(file string, line int, format string, args ...any) {
	c.list = append(c.list, Issue{File: file, Line: line, Severity: SeverityWarning, Message: fmt.Sprintf(format, args...)})
}

// maxListed is how many errors the message of a load error names.
const maxListed = 5

// err returns nil when no error was collected, else an EINVALID
// *forecast.Error listing the first errors.
func (c *collector) err() error {
	if c.errs == 0 {
		return nil
	}
	msg := fmt.Sprintf("%d error(s) in carbon-intensity data", c.errs)
	n := 0
	for _, is := range c.list {
		if is.Severity != SeverityError {
			continue
		}
		if n == maxListed {
			msg += fmt.Sprintf("; and %d more", c.errs-n)
			break
		}
		sep := "; "
		if n == 0 {
			sep = ": "
		}
		loc := is.File
		if is.Line > 0 {
			loc += ":" + strconv.Itoa(is.Line)
		}
		msg += sep + loc + ": " + is.Message
		n++
	}
	return forecast.Errorf(forecast.EINVALID, "%s", msg)
}
