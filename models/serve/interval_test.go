package serve_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models"
	"github.com/carbongate/carbongate/models/serve"
	"github.com/carbongate/carbongate/models/serve/servetest"
	"github.com/carbongate/carbongate/oip"
)

// TestIntervalOutputs serves an interval model: its metadata declares
// lower and upper, a request without outputs gets all three, and a request
// naming outputs gets exactly those.
func TestIntervalOutputs(t *testing.T) {
	t.Parallel()
	m := servetest.RidgeInterval(t, name, "DE", 0)
	im, ok := m.(models.IntervalModel)
	if !ok {
		t.Fatalf("servetest.RidgeInterval gave %T, not an interval model", m)
	}
	dir := filepath.Join(t.TempDir(), "DE")
	servetest.Save(t, dir, m)
	s, err := serve.New(serve.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Add(context.Background(), serve.Source{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	md, err := s.ModelMetadata(context.Background(), name, "")
	if err != nil {
		t.Fatal(err)
	}
	c, err := oip.ContractOf(md)
	if err != nil {
		t.Fatal(err)
	}
	if c.Horizon != servetest.Horizon || len(md.Outputs) != 3 {
		t.Fatalf("metadata outputs %+v, want forecast, lower, upper", md.Outputs)
	}
	req := request(3)
	fc, lo, hi := servetest.WantInterval(t, im, req.Inputs[0].FP32, req.Inputs[1].INT64)
	want := map[string][]float32{oip.OutputForecast: fc, oip.OutputLower: lo, oip.OutputUpper: hi}
	for _, tc := range []struct {
		note string
		ask  []string
		got  []string
	}{
		{"all by default", nil, []string{oip.OutputForecast, oip.OutputLower, oip.OutputUpper}},
		{"forecast only", []string{oip.OutputForecast}, []string{oip.OutputForecast}},
		{"interval only", []string{oip.OutputUpper, oip.OutputLower}, []string{oip.OutputLower, oip.OutputUpper}},
	} {
		t.Run(tc.note, func(t *testing.T) {
			r := request(3)
			for _, a := range tc.ask {
				r.Outputs = append(r.Outputs, oip.RequestedOutput{Name: a})
			}
			resp, err := s.Infer(context.Background(), name, "", r)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, o := range resp.Outputs {
				names = append(names, o.Name)
				if !slices.Equal(o.Shape, []int64{3, servetest.Horizon}) || !slices.Equal(o.FP32, want[o.Name]) {
					t.Fatalf("output %s: shape %v, values differ from PredictInterval", o.Name, o.Shape)
				}
			}
			if !slices.Equal(names, tc.got) {
				t.Fatalf("outputs %v, want %v", names, tc.got)
			}
		})
	}
	for i := range lo {
		if !(lo[i] <= hi[i]) {
			t.Fatalf("value %d: lower %v above upper %v", i, lo[i], hi[i])
		}
	}
	r := request(1)
	r.Outputs = []oip.RequestedOutput{{Name: "median"}}
	if _, err := s.Infer(context.Background(), name, "", r); forecast.ErrorCode(err) != forecast.EINVALID {
		t.Fatalf("unknown output: err=%v, want EINVALID", err)
	}
}
