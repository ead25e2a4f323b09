package httpedge

import (
	"encoding/json"
	"math"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v5"
)

func TestAppendFloatIsEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, f := range []float64{0, 1, -1, 0.1, 37.6, 1e-6, 9.99e-7, 1e-9, 1e20, 1e21, 1.5e300, -2.25e-12, math.MaxFloat64, math.SmallestNonzeroFloat64} {
		want, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendFloat(nil, f); string(got) != string(want) {
			t.Errorf("AppendFloat(%v) = %s, want %s", f, got, want)
		}
	}
}

type fakeHolder struct{ asked int64 }

func (h *fakeHolder) Hold(_ *echo.Context, n int64) (func(), error) {
	h.asked = n
	return func() {}, nil
}

func TestRequestState(t *testing.T) {
	t.Parallel()
	c := echo.New().NewContext(httptest.NewRequest("POST", "/", nil), httptest.NewRecorder())
	if b, complete := Body(c); b != nil || complete {
		t.Errorf("Body before SetBody = %q %v, want none", b, complete)
	}
	if _, err := Hold(c, 1<<30); err != nil {
		t.Errorf("Hold without a holder: %v, want nothing taken", err)
	}
	SetBody(c, []byte("ab"), false)
	if b, complete := Body(c); string(b) != "ab" || complete {
		t.Errorf("partial Body = %q %v, want ab false", b, complete)
	}
	if Shed(c) {
		t.Error("Shed before MarkShed")
	}
	MarkShed(c)
	if !Shed(c) {
		t.Error("not Shed after MarkShed")
	}
	h := &fakeHolder{}
	SetHolder(c, h)
	if _, err := Hold(c, 42); err != nil || h.asked != 42 {
		t.Errorf("Hold through the holder: %v, asked %d, want 42", err, h.asked)
	}
	if Committed(c) {
		t.Error("Committed before anything was written")
	}
	_ = c.String(200, "x")
	if !Committed(c) {
		t.Error("not Committed after the answer started")
	}
}
