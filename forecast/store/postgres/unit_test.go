package postgres

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
)

func testRow(zone forecast.Zone, issued, lead int, interval bool) store.ForecastRow {
	at := time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(issued) * time.Hour)
	r := store.ForecastRow{Zone: zone, Signal: forecast.SignalDirect, ModelName: "m", ModelVersion: "7",
		IssuedAt: at, TargetTime: at.Add(time.Duration(lead) * time.Hour), Value: 100.25 + float64(lead), Lower: math.NaN(), Upper: math.NaN()}
	if interval {
		r.Lower, r.Upper = r.Value-1, r.Value+1
	}
	return r
}

// decodeCopy reads a binary COPY stream back into rows, checking its
// framing: the inverse of copyReader, written from the format's description.
func decodeCopy(t *testing.T, b []byte) []store.ForecastRow {
	t.Helper()
	header := "PGCOPY\n\xff\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00"
	if !bytes.HasPrefix(b, []byte(header)) {
		t.Fatalf("stream starts %q", b[:min(len(b), 19)])
	}
	b = b[len(header):]
	epoch := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	var out []store.ForecastRow
	for {
		n := int16(binary.BigEndian.Uint16(b))
		b = b[2:]
		if n == -1 {
			if len(b) != 0 {
				t.Fatalf("%d bytes after the trailer", len(b))
			}
			return out
		}
		if n != 9 {
			t.Fatalf("tuple of %d fields", n)
		}
		fields := make([][]byte, 9)
		for i := range fields {
			l := int32(binary.BigEndian.Uint32(b))
			b = b[4:]
			if l >= 0 {
				fields[i], b = b[:l], b[l:]
			}
		}
		f8 := func(p []byte) float64 {
			if p == nil {
				return math.NaN()
			}
			return math.Float64frombits(binary.BigEndian.Uint64(p))
		}
		ts := func(p []byte) time.Time {
			return epoch.Add(time.Duration(int64(binary.BigEndian.Uint64(p))) * time.Microsecond)
		}
		out = append(out, store.ForecastRow{Zone: forecast.Zone(fields[0]), Signal: forecast.Signal(fields[1]),
			ModelName: string(fields[2]), ModelVersion: string(fields[3]), IssuedAt: ts(fields[4]), TargetTime: ts(fields[5]),
			Value: f8(fields[6]), Lower: f8(fields[7]), Upper: f8(fields[8])})
	}
}

func TestCopyReader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		rows []store.ForecastRow
	}{
		{"no rows", nil},
		{"one row with interval", []store.ForecastRow{testRow("DE", 0, 0, true)}},
		{"NULL interval", []store.ForecastRow{testRow("DE", 0, 1, false)}},
		{"several chunks", func() []store.ForecastRow {
			var rs []store.ForecastRow
			for i := range 3000 {
				rs = append(rs, testRow("US-CAL-CISO", 24*(i/96), i%96, i%2 == 0))
			}
			return rs
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// Read in small pieces to exercise partial reads.
			var buf bytes.Buffer
			if _, err := io.CopyBuffer(&buf, struct{ io.Reader }{newCopyReader(tt.rows)}, make([]byte, 1000)); err != nil {
				t.Fatal(err)
			}
			got := decodeCopy(t, buf.Bytes())
			if len(got) != len(tt.rows) {
				t.Fatalf("decoded %d rows, want %d", len(got), len(tt.rows))
			}
			for i := range got {
				w := tt.rows[i]
				same := func(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }
				if got[i].Key() != w.Key() || got[i].Value != w.Value || !same(got[i].Lower, w.Lower) || !same(got[i].Upper, w.Upper) {
					t.Fatalf("row %d decoded as %+v, want %+v", i, got[i], w)
				}
			}
		})
	}
}

func TestSortedRows(t *testing.T) {
	t.Parallel()
	a, b, c := testRow("DE", 0, 0, true), testRow("DE", 0, 1, true), testRow("SE", 0, 0, false)
	b2 := b
	b2.Value = 1
	tests := []struct {
		name string
		in   []store.ForecastRow
		want []store.ForecastRow
		same bool // the input slice itself is returned
	}{
		{"sorted is kept", []store.ForecastRow{a, b, c}, []store.ForecastRow{a, b, c}, true},
		{"unsorted", []store.ForecastRow{c, b, a}, []store.ForecastRow{a, b, c}, false},
		{"last duplicate wins", []store.ForecastRow{b, c, a, b2}, []store.ForecastRow{a, b2, c}, false},
		{"adjacent duplicates", []store.ForecastRow{a, b, b2}, []store.ForecastRow{a, b2}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := append([]store.ForecastRow(nil), tt.in...)
			got := sortedRows(in)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d rows, want %d", len(got), len(tt.want))
			}
			for i := range got {
				if got[i].Key() != tt.want[i].Key() || got[i].Value != tt.want[i].Value {
					t.Fatalf("row %d = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
			if (len(in) > 0 && &got[0] == &in[0]) != tt.same {
				t.Fatalf("input reused=%v, want %v", !tt.same, tt.same)
			}
			for i := range in {
				if in[i].Key() != tt.in[i].Key() {
					t.Fatal("sortedRows modified its input")
				}
			}
		})
	}
}

func TestForecastQuery(t *testing.T) {
	t.Parallel()
	from := time.Date(2021, 1, 1, 0, 0, 0, 0, time.FixedZone("CET", 3600))
	sql, args := dialect.ForecastQuery(store.ForecastQuery{Zones: []forecast.Zone{"DE", "SE"}, Signal: "direct", ModelVersion: "2", IssuedFrom: from})
	want := `SELECT zone, signal, model_name, model_version, issued_at, target_time, value, lower, upper FROM forecasts ` +
		`WHERE zone = ANY($1::text[]) AND signal = $2 AND model_version = $3 AND issued_at >= $4 ` +
		`ORDER BY zone COLLATE "C", model_name COLLATE "C", model_version COLLATE "C", issued_at, target_time, signal COLLATE "C"`
	if sql != want {
		t.Fatalf("sql:\n%s\nwant:\n%s", sql, want)
	}
	if len(args) != 4 || args[3].(time.Time).Location() != time.UTC {
		t.Fatalf("args %v", args)
	}
	if sql, args := dialect.ForecastQuery(store.ForecastQuery{}); strings.Contains(sql, "WHERE") || len(args) != 0 {
		t.Fatalf("empty query: %s %v", sql, args)
	}
}

func TestOpenBadURL(t *testing.T) {
	t.Parallel()
	for _, dsn := range []string{"", "postgres://u:secret@h:notaport/db"} {
		_, err := Open(context.Background(), dsn)
		if forecast.ErrorCode(err) != forecast.EINVALID || forecast.ErrorField(err) != "store" {
			t.Fatalf("Open(%q) = %v, want EINVALID naming store", dsn, err)
		}
		if strings.Contains(err.Error(), "secret") {
			t.Fatalf("error %q shows the password", err)
		}
	}
}
