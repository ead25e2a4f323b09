package dataset

import (
	"bufio"
	"compress/gzip"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/carbongate/carbongate/forecast"
)

// Layout A column names.
const (
	colTime      = "datetime_utc"
	colDirect    = "ci_direct"
	colLifecycle = "ci_lifecycle"
	sourceSuffix = "_mwh"
)

// HeaderB is the exact header of the Electricity Maps hourly CSV export
// (layout B).
const HeaderB = "Datetime (UTC),Country,Zone name,Zone id,Carbon intensity gCO₂eq/kWh (direct)," +
	"Carbon intensity gCO₂eq/kWh (Life cycle),Carbon-free energy percentage (CFE%)," +
	"Renewable energy percentage (RE%),Data source,Data estimated,Data estimation method"

var headerB = strings.Split(HeaderB, ",")

// Column positions in layout B.
const (
	bTime      = 0
	bZone      = 3
	bDirect    = 4
	bLifecycle = 5
)

const timeLayoutOut = "2006-01-02T15:04:05Z"

type layout int

const (
	layoutA layout = iota + 1
	layoutB
)

// row is one data row: vals holds direct, lifecycle, then the period's
// sources in period order; NaN marks a missing or invalid value.
type row struct {
	hour int64 // Unix time / 3600
	file int32 // index into loadState.files
	line int32
	vals []float64
}

// period is one parsed file.
type period struct {
	file    int32
	name    string
	layout  layout
	zone    forecast.Zone // layout B: the Zone id column, "" if none was valid
	zoneAt  int           // line of the first Zone id
	sources []string      // layout A source names without _mwh, in column order
	rows    []row         // sorted by hour (stable)
}

// columns describes where the values of one layout sit in a record.
type columns struct {
	n      int   // fields per record
	time   int   // index of the time
	idx    []int // indexes of direct, lifecycle, sources...
	labels []string
	zone   int // layout B: index of Zone id, else -1
}

// parse reads one CSV file (gzip-compressed or not). It reports every
// problem to c and returns what it could read; nil when not even the header
// could be read.
func parse(r io.Reader, name string, file int32, c *collector) *period {
	br := bufio.NewReaderSize(r, 64<<10)
	var src io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			c.errorf(name, 0, "cannot read gzip data: %v", err)
			return nil
		}
		defer zr.Close()
		src = zr
	}
	cr := csv.NewReader(src)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true

	header, err := cr.Read()
	if err == io.EOF {
		c.errorf(name, 0, "empty file: no header")
		return nil
	}
	if err != nil {
		csvError(c, name, err)
		return nil
	}
	p := &period{file: file, name: name}
	cols, ok := readHeader(header, p, c)
	if !ok {
		return nil
	}

	maxHour, maxLine := int64(math.MinInt64), 0
	sorted := true
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			csvError(c, name, err)
			break
		}
		line, _ := cr.FieldPos(0)
		if len(rec) != cols.n {
			c.errorf(name, line, "row has %d fields, the header has %d", len(rec), cols.n)
			continue
		}
		t, ok := parseTime(rec[cols.time], name, line, c)
		if !ok {
			continue
		}
		if cols.zone >= 0 {
			zoneOK := checkZoneB(rec[cols.zone], p, line, c)
			if !zoneOK {
				continue
			}
		}
		vals := make([]float64, len(cols.idx))
		for k, i := range cols.idx {
			v, problem := parseValue(rec[i])
			if problem != "" {
				c.warnf(name, line, "%s: %s; treated as missing", cols.labels[k], problem)
			}
			vals[k] = v
		}
		h := t.Unix() / 3600
		if h < maxHour {
			sorted = false
			c.warnf(name, line, "row for %s is out of order (line %d is %s); rows are sorted by time",
				t.Format(timeLayoutOut), maxLine, time.Unix(maxHour*3600, 0).UTC().Format(timeLayoutOut))
		} else {
			maxHour, maxLine = h, line
		}
		p.rows = append(p.rows, row{hour: h, file: file, line: int32(line), vals: vals})
	}
	if !sorted {
		slices.SortStableFunc(p.rows, func(a, b row) int { return cmpInt64(a.hour, b.hour) })
	}
	if len(p.rows) == 0 {
		c.errorf(name, 0, "no usable data rows")
	}
	return p
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// csvError reports a read error; reading stops after it because a broken
// quote leaves no reliable place to resume.
func csvError(c *collector, name string, err error) {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		c.errorf(name, pe.StartLine, "malformed CSV: %v; reading stopped", pe.Err)
		return
	}
	c.errorf(name, 0, "read error: %v; reading stopped", err)
}

// readHeader detects the layout and the columns.
func readHeader(header []string, p *period, c *collector) (columns, bool) {
	h := make([]string, len(header))
	for i, s := range header {
		h[i] = strings.TrimSpace(s)
	}
	if len(h) > 0 {
		h[0] = strings.TrimSpace(strings.TrimPrefix(h[0], "\ufeff"))
	}
	switch {
	case len(h) > 0 && strings.EqualFold(h[0], colTime):
		p.layout = layoutA
		return headerA(h, p, c)
	case len(h) > 0 && h[0] == headerB[0]:
		p.layout = layoutB
		if len(h) != len(headerB) {
			c.errorf(p.name, 1, "Electricity Maps header has %d columns, want %d: %s", len(h), len(headerB), HeaderB)
			return columns{}, false
		}
		for i := range h {
			if h[i] != headerB[i] {
				c.errorf(p.name, 1, "Electricity Maps header column %d is %q, want %q", i+1, h[i], headerB[i])
				return columns{}, false
			}
		}
		return columns{
			n: len(h), time: bTime, zone: bZone,
			idx:    []int{bDirect, bLifecycle},
			labels: []string{"direct intensity", "life-cycle intensity"},
		}, true
	}
	first := ""
	if len(h) > 0 {
		first = h[0]
	}
	c.errorf(p.name, 1, "unknown header starting with %q: want %s,%s,%s,<source>%s... or the Electricity Maps export header %s",
		first, colTime, colDirect, colLifecycle, sourceSuffix, HeaderB)
	return columns{}, false
}

func headerA(h []string, p *period, c *collector) (columns, bool) {
	cols := columns{n: len(h), time: 0, zone: -1, idx: []int{-1, -1}, labels: []string{colDirect, colLifecycle}}
	seen := map[string]int{}
	ok := true
	for i := 1; i < len(h); i++ {
		name := strings.ToLower(h[i])
		if j, dup := seen[name]; dup {
			c.errorf(p.name, 1, "column %q appears twice (columns %d and %d)", h[i], j+1, i+1)
			ok = false
			continue
		}
		seen[name] = i
		switch {
		case name == colDirect:
			cols.idx[0] = i
		case name == colLifecycle:
			cols.idx[1] = i
		case strings.HasSuffix(name, sourceSuffix) && len(name) > len(sourceSuffix):
			cols.idx = append(cols.idx, i)
			cols.labels = append(cols.labels, h[i])
			p.sources = append(p.sources, strings.TrimSuffix(name, sourceSuffix))
		default:
			c.warnf(p.name, 1, "column %q is neither %s, %s nor <source>%s; ignored", h[i], colDirect, colLifecycle, sourceSuffix)
		}
	}
	if cols.idx[0] < 0 {
		c.errorf(p.name, 1, "no %s column", colDirect)
		ok = false
	}
	if cols.idx[1] < 0 {
		c.errorf(p.name, 1, "no %s column", colLifecycle)
		ok = false
	}
	return cols, ok
}

// checkZoneB checks the Zone id of a layout B row: one zone per file.
func checkZoneB(s string, p *period, line int, c *collector) bool {
	z, err := forecast.ParseZone(s)
	if err != nil {
		c.errorf(p.name, line, "Zone id: %s", forecast.ErrorMessage(err))
		return false
	}
	if p.zone == "" {
		p.zone, p.zoneAt = z, line
		return true
	}
	if z != p.zone {
		c.errorf(p.name, line, "Zone id %s differs from %s (line %d); a file must hold one zone", z, p.zone, p.zoneAt)
		return false
	}
	return true
}

// parseTime reads an RFC 3339 time, or "2006-01-02 15:04:05" (also with a
// T, or with an offset) taken as UTC when no offset is given. The time must
// be on the hour in UTC.
func parseTime(s, name string, line int, c *collector) (time.Time, bool) {
	s = strings.TrimSpace(s)
	var t time.Time
	var err error
	hasOffset := true
	for _, l := range [...]string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999Z07:00"} {
		if t, err = time.Parse(l, s); err == nil {
			break
		}
	}
	if err != nil {
		hasOffset = false
		for _, l := range [...]string{"2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999"} {
			if t, err = time.Parse(l, s); err == nil {
				break
			}
		}
	}
	if err != nil {
		c.errorf(name, line, "time %q is not RFC 3339 nor \"YYYY-MM-DD hh:mm:ss\" (UTC)", s)
		return time.Time{}, false
	}
	u := t.UTC()
	if hasOffset {
		if _, off := t.Zone(); off != 0 {
			c.warnf(name, line, "time %s is not in UTC; converted to %s", s, u.Format(time.RFC3339Nano))
		}
	}
	if !u.Equal(u.Truncate(time.Hour)) {
		c.errorf(name, line, "time %s is not on the hour in UTC (%s); the data must be hourly", s, u.Format(time.RFC3339Nano))
		return time.Time{}, false
	}
	return u, true
}

// parseValue reads a non-negative finite number; it returns NaN and a
// description of the problem for anything else.
func parseValue(s string) (float64, string) {
	s = strings.TrimSpace(s)
	if s == "" {
		return math.NaN(), "empty value"
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return math.NaN(), fmt.Sprintf("%q is not a finite number", s)
	}
	if v < 0 {
		return math.NaN(), fmt.Sprintf("%s is negative", s)
	}
	if v == 0 {
		v = 0 // no negative zero
	}
	return v, ""
}
