package ridge

import (
	"context"
	"slices"

	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/gonum/mat"

	"github.com/carbongate/carbongate/forecast"
)

// group is the sufficient statistics of a set of samples.
type group struct {
	G  *mat.SymDense // XᵀX
	B  *mat.Dense    // XᵀY
	yy []float64     // Σ y² per lead hour
	n  int
}

func newGroup(p, H int) *group {
	return &group{G: mat.NewSymDense(p, nil), B: mat.NewDense(p, H, nil), yy: make([]float64, H)}
}

func (g *group) add(X, Y *mat.Dense) {
	r, _ := X.Dims()
	if r == 0 {
		return
	}
	g.G.SymRankK(g.G, 1, X.T())
	var b mat.Dense
	b.Mul(X.T(), Y)
	g.B.Add(g.B, &b)
	raw := Y.RawMatrix()
	for i := range r {
		for h, y := range raw.Data[i*raw.Stride:][:raw.Cols] {
			g.yy[h] += y * y
		}
	}
	g.n += r
}

// originStats is one origin's statistics: the total, and per fold the
// samples of the block (core) and those of its edge (targets reaching into
// the next block, a subset of core).
type originStats struct {
	o    int
	G    *mat.SymDense
	B    *mat.Dense
	n    int
	core []*group
	edge []*group
}

// accumulate builds the statistics of origin o.
func (f *fitter) accumulate(o int) (*originStats, error) {
	c := f.c
	p, H := c.NumFeatures(), c.Horizon
	st := &originStats{o: o, G: mat.NewSymDense(p, nil), B: mat.NewDense(p, H, nil)}
	for range f.nFolds {
		st.core = append(st.core, newGroup(p, H))
		st.edge = append(st.edge, newGroup(p, H))
	}
	core, edge := f.rows(o, false)
	for k := range f.nFolds {
		st.core[k].add(core[k].X, core[k].Y)
		st.edge[k].add(edge[k].X, edge[k].Y)
		st.G.AddSym(st.G, st.core[k].G)
		st.B.Add(st.B, st.core[k].B)
		st.n += st.core[k].n
		if st.core[k].n == 0 {
			return nil, forecast.Errorf(forecast.EINVALID, "no complete training sample for %s in cross-validation block %d of %d (origin %d); use fewer folds or more data", f.spec.Name, k+1, f.nFolds, o)
		}
	}
	return st, nil
}

// train returns the statistics of origin st's samples that fold k's fit
// may use: all but block k and the edge of block k−1.
func (st *originStats) train(k int) (*mat.SymDense, *mat.Dense, int) {
	G := mat.NewSymDense(st.G.SymmetricDim(), nil)
	G.CopySym(st.G)
	B := mat.DenseCopyOf(st.B)
	n := st.n
	sub := func(g *group) {
		var neg mat.SymDense
		neg.ScaleSym(-1, g.G)
		G.AddSym(G, &neg)
		B.Sub(B, g.B)
		n -= g.n
	}
	sub(st.core[k])
	if k > 0 {
		sub(st.edge[k-1])
	}
	return G, B, n
}

// solve returns W (NumFeatures × Horizon) minimising the ridge objective
// on statistics G, B of n samples with the penalty of each lead hour taken
// from c (Lambda or LeadLambdas).
func (st *originStats) solve(c *Config, G *mat.SymDense, B *mat.Dense, n int) (*mat.Dense, error) {
	p, H := B.Dims()
	W := mat.NewDense(p, H, nil)
	for _, lam := range distinctLambdas(c) {
		var cols []int
		for h := range H {
			if c.lambda(h) == lam {
				cols = append(cols, h)
			}
		}
		w, err := solveOne(G, B, n, lam, cols)
		if err != nil {
			return nil, err
		}
		for i, h := range cols {
			for j := range p {
				W.Set(j, h, w.At(j, i))
			}
		}
	}
	return W, nil
}

func distinctLambdas(c *Config) []float64 {
	if len(c.LeadLambdas) == 0 {
		return []float64{c.Lambda}
	}
	ls := slices.Clone(c.LeadLambdas)
	slices.Sort(ls)
	return slices.Compact(ls)
}

// solveOne solves (G + λnI′) W = B[:, cols] (I′: identity without the
// intercept) by Cholesky (LAPACK's potrf/potrs directly: mat.Cholesky
// would also estimate the condition number, a fifth of the fitting time).
func solveOne(G *mat.SymDense, B *mat.Dense, n int, lam float64, cols []int) (*mat.Dense, error) {
	p, _ := B.Dims()
	A := mat.NewSymDense(p, nil)
	A.CopySym(G)
	penalty := lam * float64(n)
	for j := 1; j < p; j++ {
		A.SetSym(j, j, A.At(j, j)+penalty)
	}
	T, ok := lapack64.Potrf(A.RawSymmetric())
	if !ok {
		return nil, forecast.Errorf(forecast.EINVALID, "singular normal equations")
	}
	W := mat.NewDense(p, len(cols), nil)
	for i, h := range cols {
		for j := range p {
			W.Set(j, i, B.At(j, h))
		}
	}
	lapack64.Potrs(T, W.RawMatrix())
	return W, nil
}

// chooseLambdas returns, per lead day, the grid λ with the least held-out
// squared error over every fold and origin.
func (f *fitter) chooseLambdas(ctx context.Context, stats []*originStats) ([]float64, error) {
	c := f.c
	H := c.Horizon
	loss := make([][]float64, len(c.LambdaGrid)) // [λ][lead day]
	for i := range loss {
		loss[i] = make([]float64, c.LeadDays())
	}
	for _, st := range stats {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for k := range f.nFolds {
			G, B, n := st.train(k)
			test := st.core[k]
			for i, lam := range c.LambdaGrid {
				W, err := solveOne(G, B, n, lam, allCols(H))
				if err != nil {
					return nil, forecast.Errorf(forecast.EINVALID, "ridge normal equations of %s are singular at λ=%g; raise the grid", f.spec.Name, lam)
				}
				// ‖Y − XW‖² per column = yy − 2 wᵀb + wᵀGw.
				var GW mat.Dense
				GW.Mul(test.G, W)
				for h := range H {
					var cross, quad float64
					for j := range W.RawMatrix().Rows {
						w := W.At(j, h)
						cross += w * test.B.At(j, h)
						quad += w * GW.At(j, h)
					}
					loss[i][h/24] += test.yy[h] - 2*cross + quad
				}
			}
		}
	}
	out := make([]float64, c.LeadDays())
	for d := range out {
		best := 0
		for i := range c.LambdaGrid {
			if loss[i][d] < loss[best][d] {
				best = i
			}
		}
		out[d] = c.LambdaGrid[best]
	}
	return out, nil
}

func allCols(H int) []int {
	cols := make([]int, H)
	for h := range cols {
		cols[h] = h
	}
	return cols
}
