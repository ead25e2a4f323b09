package backfill

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/oip"
	oipgrpc "github.com/carbongate/carbongate/oip/grpc"
	"github.com/carbongate/carbongate/oip/rest"
)

// Unversioned is the model_version of rows from an OIP model whose server
// reports no version.
const Unversioned = "unversioned"

// OIP is a Predictor calling a model over the Open Inference Protocol with
// the forecaster tensor contract (history FP32 [B, L], start_unix INT64
// [B, 1] → forecast FP32 [B, H], optional lower/upper).
type OIP struct {
	Client   oip.Client
	Model    string // the OIP model name
	Contract oip.Contract
}

var _ Predictor = OIP{}

// Predict implements Predictor.
func (p OIP) Predict(ctx context.Context, batch []Input) ([]Output, error) {
	hist := make([][]float64, len(batch))
	starts := make([]time.Time, len(batch))
	for i, in := range batch {
		hist[i], starts[i] = in.History, in.Start
	}
	req, err := oip.NewForecastRequest("", hist, starts)
	if err != nil {
		return nil, err
	}
	resp, err := p.Client.Infer(ctx, p.Model, "", req)
	if err != nil {
		return nil, err
	}
	fc, lower, upper, err := oip.ParseForecastResponse(resp, len(batch), p.Contract)
	if err != nil {
		return nil, err
	}
	out := make([]Output, len(batch))
	for i := range out {
		out[i].Values = fc[i]
		if lower != nil && upper != nil {
			out[i].Lower, out[i].Upper = lower[i], upper[i]
		}
	}
	return out, nil
}

// DialEndpoint returns the OIP client of url: http(s)://… for REST,
// grpc://host:port for gRPC. Neither connects before the first call.
// Errors are EINVALID naming "endpoint".
func DialEndpoint(url string, timeout time.Duration) (oip.Client, error) {
	if target, ok := strings.CutPrefix(url, "grpc://"); ok {
		c, err := oipgrpc.NewClient(strings.TrimRight(target, "/"), oipgrpc.WithTimeout(timeout))
		if err != nil {
			return nil, &forecast.Error{Code: forecast.EINVALID, Field: "endpoint", Message: "endpoint " + strconv.Quote(url) + " is not a gRPC target", Err: err}
		}
		return c, nil
	}
	c, err := rest.NewClient(url, rest.WithTimeout(timeout), rest.WithBinaryInputs(true), rest.WithBinaryOutputs(true))
	if err != nil {
		return nil, &forecast.Error{Code: forecast.EINVALID, Field: "endpoint", Message: "endpoint " + strconv.Quote(url) + ": want http(s)://host:port or grpc://host:port", Err: err}
	}
	return c, nil
}

// OIPModel reads the metadata of model on c (retrying EUNAVAILABLE like
// r) and returns the zone Model: its contract, and as version the one the
// metadata reports (the first), or Unversioned. ENOTFOUND when the server
// does not know the model; EINVALID when it does not honour the contract.
func OIPModel(ctx context.Context, c oip.Client, model string, r Retry) (Model, error) {
	var md oip.ModelMetadata
	get := predictorFunc(func(ctx context.Context, _ []Input) ([]Output, error) {
		var err error
		md, err = c.ModelMetadata(ctx, model, "")
		return nil, err
	})
	r.Next = get
	if _, err := r.Predict(ctx, nil); err != nil {
		return Model{}, err
	}
	ct, err := oip.ContractOf(md)
	if err != nil {
		return Model{}, err
	}
	version := Unversioned
	if len(md.Versions) > 0 && md.Versions[0] != "" {
		version = md.Versions[0]
	}
	return Model{Name: model, Version: version, Lookback: ct.Lookback, Horizon: ct.Horizon,
		Predictor: OIP{Client: c, Model: model, Contract: ct}}, nil
}

type predictorFunc func(ctx context.Context, batch []Input) ([]Output, error)

func (f predictorFunc) Predict(ctx context.Context, batch []Input) ([]Output, error) {
	return f(ctx, batch)
}

func isDeadline(err error) bool { return errors.Is(err, context.DeadlineExceeded) }
