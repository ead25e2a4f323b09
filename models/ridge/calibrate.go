package ridge

import (
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models/conformal"
)

// calibrate returns origin st's interval bounds (Horizon lower, then
// Horizon upper) from the out-of-fold log-ratio residuals of the samples
// issued at that origin, each divided by its history's
// conformal.Difficulty.
func (f *fitter) calibrate(st *originStats) ([]float64, error) {
	c := f.c
	p, H := c.NumFeatures(), c.Horizon
	res := make([][]float64, H)
	logFloor := math.Log(conformal.Floor)
	own, _ := f.rows(st.o, true)
	for k := range f.nFolds {
		X, Y := own[k].X, own[k].Y
		r, _ := X.Dims()
		if r == 0 {
			continue
		}
		G, B, n := st.train(k)
		W, err := st.solve(c, G, B, n)
		if err != nil {
			return nil, forecast.Errorf(forecast.EINVALID, "ridge normal equations of %s are singular in fold %d", f.spec.Name, k+1)
		}
		var P mat.Dense
		P.Mul(X.Slice(0, r, 0, p), W)
		for i := range r {
			mu, sd, d := X.At(i, p), X.At(i, p+1), X.At(i, p+2)
			for h := range H {
				y, yhat := mu+sd*Y.At(i, h), mu+sd*P.At(i, h)
				var r float64
				if c.Scaling == ScaleLog {
					// Already logs floored at conformal.Floor: the
					// log ratio of the forecast exp(yhat), unless
					// that is below the floor.
					r = y - max(yhat, logFloor)
				} else {
					r = conformal.LogRatio(y, yhat)
				}
				res[h] = append(res[h], r/d)
			}
		}
	}
	out := make([]float64, 2*H)
	for h := range H {
		lo, hi, err := conformal.Bounds(res[h], c.Interval)
		if err != nil {
			return nil, forecast.Errorf(forecast.EINVALID, "calibrating the interval of %s (origin %d, lead %d): %s", f.spec.Name, st.o, h, forecast.ErrorMessage(err))
		}
		out[h], out[H+h] = lo, hi
	}
	return out, nil
}
