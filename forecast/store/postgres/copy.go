package postgres

import (
	"encoding/binary"
	"io"
	"math"

	"github.com/carbongate/carbongate/forecast/store"
)

// pgEpochMicros is 2000-01-01T00:00:00Z, PostgreSQL's timestamp epoch, in
// Unix microseconds.
const pgEpochMicros = 946_684_800_000_000

// copyChunk is how many bytes copyReader encodes at a time.
const copyChunk = 64 << 10

// copyReader streams rows in PostgreSQL's binary COPY format (a header,
// one tuple per row, a trailer), encoding them as the driver reads: no
// per-row allocation and no copy of the whole batch in memory. Lower and
// Upper are NULL when the row has no interval.
type copyReader struct {
	rows    []store.ForecastRow
	next    int
	buf     []byte
	off     int
	started bool
	ended   bool
}

func newCopyReader(rows []store.ForecastRow) *copyReader {
	return &copyReader{rows: rows, buf: make([]byte, 0, copyChunk+512)}
}

// Read implements io.Reader.
func (c *copyReader) Read(p []byte) (int, error) {
	if c.off == len(c.buf) {
		if c.ended {
			return 0, io.EOF
		}
		c.fill()
	}
	n := copy(p, c.buf[c.off:])
	c.off += n
	return n, nil
}

// fill encodes the next chunk of the stream into buf.
func (c *copyReader) fill() {
	b := c.buf[:0]
	if !c.started {
		b = append(b, "PGCOPY\n\xff\r\n\x00"...)
		b = binary.BigEndian.AppendUint32(b, 0) // flags
		b = binary.BigEndian.AppendUint32(b, 0) // header extension length
		c.started = true
	}
	for c.next < len(c.rows) && len(b) < copyChunk {
		b = appendTuple(b, &c.rows[c.next])
		c.next++
	}
	if c.next == len(c.rows) {
		b = binary.BigEndian.AppendUint16(b, 0xffff) // trailer: field count -1
		c.ended = true
	}
	c.buf, c.off = b, 0
}

func appendTuple(b []byte, r *store.ForecastRow) []byte {
	b = binary.BigEndian.AppendUint16(b, 9)
	b = appendText(b, string(r.Zone))
	b = appendText(b, string(r.Signal))
	b = appendText(b, r.ModelName)
	b = appendText(b, r.ModelVersion)
	b = appendInt64(b, r.IssuedAt.UnixMicro()-pgEpochMicros)
	b = appendInt64(b, r.TargetTime.UnixMicro()-pgEpochMicros)
	b = appendInt64(b, int64(math.Float64bits(r.Value)))
	if !r.HasInterval() {
		b = binary.BigEndian.AppendUint32(b, math.MaxUint32) // length -1: NULL
		return binary.BigEndian.AppendUint32(b, math.MaxUint32)
	}
	b = appendInt64(b, int64(math.Float64bits(r.Lower)))
	return appendInt64(b, int64(math.Float64bits(r.Upper)))
}

func appendText(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

func appendInt64(b []byte, v int64) []byte {
	b = binary.BigEndian.AppendUint32(b, 8)
	return binary.BigEndian.AppendUint64(b, uint64(v))
}
