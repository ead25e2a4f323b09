package casdk

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/httpedge"
)

// flushBytes is how much of a streamed answer is buffered before it is
// written: an answer of any size holds one such buffer.
const flushBytes = 32 << 10

// located is one location's observed hours, as read for an answer.
type located struct {
	name string // as the client gave it
	s    forecast.Series
}

// writeEmissions answers 200 with the SDK's EmissionsData array of the
// hours of every location whose value keep accepts (NaN hours are never
// written), byte for byte what encoding/json writes for []emissionsData,
// written as it is encoded rather than built whole. ctx is checked at
// every flush: once it is done the connection is closed, so that the
// client sees the answer cut rather than a short one.
func writeEmissions(ctx context.Context, c *echo.Context, locs []located, keep func(float64) bool) error {
	resp := c.Response()
	resp.Header().Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	resp.WriteHeader(http.StatusOK)
	b := make([]byte, 0, flushBytes+256)
	b = append(b, '[')
	first := true
	dur := []byte(`,"duration":"` + timeSpan(time.Hour) + `"}`)
	for _, l := range locs {
		q, err := json.Marshal(l.name)
		if err != nil {
			return err
		}
		for i, v := range l.s.Values {
			if !known(v) || !keep(v) {
				continue
			}
			if !first {
				b = append(b, ',')
			}
			first = false
			b = append(b, `{"location":`...)
			b = append(b, q...)
			b = append(b, `,"time":"`...)
			b = l.s.Start.Add(time.Duration(i)*time.Hour).UTC().AppendFormat(b, time.RFC3339)
			b = append(b, `","rating":`...)
			b = httpedge.AppendFloat(b, v)
			b = append(b, dur...)
			if len(b) >= flushBytes {
				if err := ctx.Err(); err != nil {
					cut(resp)
					return err
				}
				if _, err := resp.Write(b); err != nil {
					return err
				}
				b = b[:0]
			}
		}
	}
	b = append(b, "]\n"...)
	_, err := resp.Write(b)
	return err
}

// known reports whether v is a value (NaN marks an hour without one; an
// infinity is none either).
func known(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// cut closes the connection of a half-written answer (HTTP/1); where it
// cannot, the answer ends where it is.
func cut(w http.ResponseWriter) {
	if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
		conn.Close()
	}
}
