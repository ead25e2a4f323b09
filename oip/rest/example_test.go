package rest_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/oip"
	"github.com/carbongate/carbongate/oip/rest"
)

// persistence is a forecaster honouring the contract with L=3, H=2: it
// repeats the last hour.
type persistence struct{}

var con = oip.Contract{Lookback: 3, Horizon: 2}

func (persistence) ServerMetadata(context.Context) (oip.ServerMetadata, error) {
	return oip.ServerMetadata{Name: "example"}, nil
}
func (persistence) ServerLive(context.Context) (bool, error)  { return true, nil }
func (persistence) ServerReady(context.Context) (bool, error) { return true, nil }
func (persistence) ModelReady(_ context.Context, m, _ string) (bool, error) {
	return m == "persistence", nil
}
func (persistence) ModelMetadata(_ context.Context, m, _ string) (oip.ModelMetadata, error) {
	if m != "persistence" {
		return oip.ModelMetadata{}, forecast.Errorf(forecast.ENOTFOUND, "model %q not found", m)
	}
	return con.Metadata(m, []string{"1"}, "example"), nil
}
func (persistence) Infer(_ context.Context, m, _ string, req *oip.InferenceRequest) (*oip.InferenceResponse, error) {
	if m != "persistence" {
		return nil, forecast.Errorf(forecast.ENOTFOUND, "model %q not found", m)
	}
	hist, _, err := oip.ParseForecastRequest(req, con)
	if err != nil {
		return nil, err
	}
	fc := make([][]float64, len(hist))
	for i, h := range hist {
		fc[i] = []float64{h[len(h)-1], h[len(h)-1]}
	}
	return oip.NewForecastResponse(m, "1", "", fc, nil, nil), nil
}

func ExampleNewClient() {
	srv := httptest.NewServer(rest.NewHandler(persistence{}))
	defer srv.Close()
	c, err := rest.NewClient(srv.URL, rest.WithBinaryInputs(true), rest.WithTimeout(2*time.Second))
	if err != nil {
		panic(err)
	}
	defer c.Close()
	ctx := context.Background()

	md, _ := c.ModelMetadata(ctx, "persistence", "")
	contract, _ := oip.ContractOf(md)
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	req, _ := oip.NewForecastRequest("req-1", [][]float64{{310, 290, 275}}, []time.Time{start})
	resp, err := c.Infer(ctx, "persistence", "", req)
	if err != nil {
		panic(err)
	}
	fc, _, _, err := oip.ParseForecastResponse(resp, 1, contract)
	fmt.Println(resp.ID, fc, err)

	_, err = c.Infer(ctx, "nope", "", req)
	fmt.Println(forecast.ErrorCode(err))
	// Output:
	// req-1 [[275 275]] <nil>
	// not_found
}
