package oip

import (
	"context"
	"errors"
	"strconv"

	"github.com/carbongate/carbongate/forecast"
)

// Limiter is implemented by a Backend that bounds the infer requests of
// each model. Transports call InferLimits before reading or decoding any
// tensor data: its answer sizes the body or message they accept, and
// Limits.Check rejects inputs whose declared shape cannot fit before
// anything is allocated for their data. It returns ENOTFOUND for an unknown
// model or version and EUNAVAILABLE while the model loads, like Infer, so
// a transport can answer those without reading the body at all.
type Limiter interface {
	InferLimits(ctx context.Context, model, version string) (Limits, error)
}

// Observer is implemented by a Backend that counts infer requests. Infer
// counts the requests it answers; a transport calls InferRejected for every
// infer request it answers without calling Infer (malformed, too large,
// shed for overload, rejected by Limits.Check), so that every answered
// request is counted once.
type Observer interface {
	InferRejected(model string, err error)
}

// Sizes of the infer request encodings that Limits assumes.
const (
	// MaxJSONBytesPerValue is the worst-case size of one tensor value in
	// JSON: the longest shortest-form float64 ("-2.2250738585072014e-308",
	// 24 bytes: clients commonly send FP32 data as float64) or int64
	// (20 bytes), plus a separator and the indentation of pretty-printed
	// nested data. A tighter bound would refuse valid requests from
	// clients that print more digits; this one only has to be small next
	// to the memory of the server.
	MaxJSONBytesPerValue = 32
	// RequestOverheadBytes bounds everything in a request but the tensor
	// values: id, parameters, names, datatypes, shapes, requested outputs.
	RequestOverheadBytes = 64 << 10
)

// Limits bound the infer requests of one model: its declared Inputs, each
// with at most MaxBatch rows. Inputs may be shared: do not modify them. A variable dimension (-1) of a declaration is
// the batch; the forecaster contract declares only the first dimension as
// variable (history [-1, L], start_unix [-1, 1]).
type Limits struct {
	Model    string // for messages
	Inputs   []TensorMetadata
	MaxBatch int
}

// Limits returns the limits of the model md describes, at most maxBatch
// rows per request.
func (md ModelMetadata) Limits(maxBatch int) Limits {
	return Limits{Model: md.Name, Inputs: md.Inputs, MaxBatch: maxBatch}
}

// MaxElements returns how many values the declared input m holds at most:
// its fixed dimensions times MaxBatch for each variable one.
func (l Limits) MaxElements(m TensorMetadata) int64 {
	n := int64(1)
	for _, d := range m.Shape {
		if d < 0 {
			d = int64(l.MaxBatch)
		}
		n *= d
	}
	return n
}

// MaxJSONBytes returns the largest JSON infer request body the limits allow:
// MaxJSONBytesPerValue per value of every input, plus RequestOverheadBytes.
// For the forecaster (L = 168) at 1,024 rows this is about 5.6 MB.
func (l Limits) MaxJSONBytes() int64 {
	n := int64(RequestOverheadBytes)
	for _, m := range l.Inputs {
		n += l.MaxElements(m) * MaxJSONBytesPerValue
	}
	return n
}

// MaxBinaryBytes returns the largest infer request in binary form: the
// exact byte size of every input at MaxBatch rows, plus RequestOverheadBytes
// for the JSON header (REST binary extension) or the message fields (gRPC;
// raw contents are exact, packed FP32 contents are 4 bytes a value; INT64
// contents are varints of up to 10 bytes, counted at 10 here).
func (l Limits) MaxBinaryBytes() int64 {
	n := int64(RequestOverheadBytes)
	for _, m := range l.Inputs {
		size := int64(m.Datatype.Size())
		if m.Datatype == INT64 {
			size = 10
		}
		n += l.MaxElements(m) * size
	}
	return n
}

// Check judges inputs by their names, datatypes and shapes only (data is
// not looked at, and may not be decoded yet): every declared input present
// once and no other, each of its declared datatype with a shape that fits
// the declaration, and every variable dimension at most MaxBatch. Errors are
// EINVALID naming the input.
func (l Limits) Check(inputs []Tensor) error {
	md := ModelMetadata{Name: l.Model, Inputs: l.Inputs}
	if err := md.CheckRequest(&InferenceRequest{Inputs: inputs}); err != nil {
		return err
	}
	for i := range inputs {
		m, _ := md.Input(inputs[i].Name)
		if err := l.checkBatch(m, &inputs[i]); err != nil {
			return err
		}
	}
	return nil
}

// checkBatch checks the variable dimensions of t, which fits m.
func (l Limits) checkBatch(m TensorMetadata, t *Tensor) error {
	for j, d := range m.Shape {
		switch b := t.Shape[j]; {
		case d >= 0:
		case b < 0:
			return forecast.FieldErrorf(forecast.EINVALID, t.Name, "input %q: dimension %d is negative (%d)", t.Name, j, b)
		case b > int64(l.MaxBatch):
			return forecast.FieldErrorf(forecast.EINVALID, t.Name, "input %q: batch size %d is above this server's maximum %d", t.Name, b, l.MaxBatch)
		}
	}
	return nil
}

// ErrOverloaded is in the chain of the error a transport answers when an
// infer request finds every slot of its Gate taken. Transports render it as
// EUNAVAILABLE with a retry hint (REST: 503 and Retry-After).
var ErrOverloaded = errors.New("overloaded")

// RetryAfterSeconds is the retry hint of a request shed for overload.
const RetryAfterSeconds = 1

// Gate bounds the infer requests in flight across a server's transports.
// There is no wait queue: a request that finds every slot taken is
// answered at once (Overloaded), since the admitted requests already share
// the CPU and a waiting one would only hold its body in memory while its
// client's deadline runs out.
type Gate struct {
	slots chan struct{}
}

// NewGate returns a Gate of n slots (at least 1).
func NewGate(n int) *Gate { return &Gate{slots: make(chan struct{}, max(n, 1))} }

// TryEnter takes a slot and reports whether there was one; a caller that
// got one must Leave.
func (g *Gate) TryEnter() bool {
	select {
	case g.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

// Leave frees a slot taken by TryEnter.
func (g *Gate) Leave() { <-g.slots }

// InFlight returns the slots taken.
func (g *Gate) InFlight() int { return len(g.slots) }

// Cap returns the number of slots.
func (g *Gate) Cap() int { return cap(g.slots) }

// Overloaded returns the EUNAVAILABLE error of a request shed by g, with
// ErrOverloaded in its chain.
func (g *Gate) Overloaded() error { return Overloaded(int64(g.Cap()), "infer requests in flight") }

// Overloaded returns the EUNAVAILABLE error of a request shed because limit
// of what were taken, with ErrOverloaded in its chain.
func Overloaded(limit int64, what string) error {
	return &forecast.Error{Code: forecast.EUNAVAILABLE, Err: ErrOverloaded,
		Message: "overloaded: " + strconv.FormatInt(limit, 10) + " " + what + "; retry after " + strconv.Itoa(RetryAfterSeconds) + " s"}
}
