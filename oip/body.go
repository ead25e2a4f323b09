package oip

import (
	"errors"
	"io"
	"net/http"
	"os"
	"slices"
	"sync/atomic"
	"time"
)

// BodyBudget bounds the bytes of request bodies a server holds while it
// reads them and serves the requests, beyond a free part of each body:
// shared by the gateway's and carbonserve's HTTP servers, which read a
// body whole before a request takes an in-flight slot, so that a client
// that sends slowly holds no slot others need. A client that sends
// slowly holds only the bytes it has sent; clients that send large
// bodies and stall can spend the budget, and then only large bodies are
// refused. Safe for concurrent use.
type BodyBudget struct {
	size, free int64
	left       atomic.Int64
}

// NewBodyBudget returns a budget of size bytes for what bodies hold
// beyond their first free bytes each.
func NewBodyBudget(size, free int64) *BodyBudget {
	b := &BodyBudget{size: size, free: free}
	b.left.Store(size)
	return b
}

// Size returns the budget's size in bytes.
func (b *BodyBudget) Size() int64 { return b.size }

// Left returns the bytes of the budget not held now: what tests wait on
// to know that stalled bodies have drawn on it.
func (b *BodyBudget) Left() int64 { return b.left.Load() }

// Take takes n bytes from the budget (the caller has taken off any free
// part) for memory a request holds other than its body, such as a large
// answer's data; false, taking nothing, when the budget has less left.
// Give them back with Give.
func (b *BodyBudget) Take(n int64) bool {
	if b.left.Add(-n) >= 0 {
		return true
	}
	b.left.Add(n)
	return false
}

// Give returns held bytes, as ReadBody reported them, once the body is no
// longer held.
func (b *BodyBudget) Give(held int64) { b.left.Add(held) }

// ErrBodyBudget is returned by ReadBody when the budget is spent.
var ErrBodyBudget = errors.New("request body budget spent")

// ReadBody reads r, a body of length bytes (-1: unknown) and at most limit,
// whole into buf (which it grows), taking the bytes beyond the budget's
// free part from b as the buffer grows; held is what the caller gives back
// with b.Give once done with the body, also after an error. Errors: a
// *http.MaxBytesError beyond limit, ErrBodyBudget, or the reader's (a body
// shorter than its length, a read deadline). A nil b is no budget.
func ReadBody(r io.Reader, length, limit int64, b *BodyBudget, buf []byte) (body []byte, held int64, err error) {
	buf = buf[:0]
	end := int64(cap(buf)) // bytes of buf in use, accounted for
	for {
		if int64(len(buf)) == end {
			want := 2 * end
			if length >= 0 {
				want = min(want, length+1) // +1 sees the EOF without growing again
			}
			want = min(max(want, end+512), limit+1)
			if b != nil && want > b.free {
				extra := want - max(b.free, end)
				if !b.Take(extra) {
					return buf, held, ErrBodyBudget
				}
				held += extra
			}
			buf = slices.Grow(buf, int(want)-len(buf))
			end = want
		}
		n, err := r.Read(buf[len(buf):end])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return buf, held, &http.MaxBytesError{Limit: limit}
		}
		if errors.Is(err, io.EOF) {
			return buf, held, nil
		}
		if err != nil {
			return buf, held, err
		}
	}
}

// LateBody reports whether err, from ReadBody, is a body still arriving
// when the connection's read deadline passed. If so it prepares w for the
// answer: by then the write deadline may have passed too, so the answer
// gets a second of its own, and the connection is closed after it.
func LateBody(w http.ResponseWriter, err error) bool {
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		return false
	}
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(time.Second))
	w.Header().Set("Connection", "close")
	return true
}
