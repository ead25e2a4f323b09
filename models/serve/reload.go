package serve

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/carbongate/carbongate/models/artifact"
)

// ReloadResult says what Reload did to one model.
type ReloadResult struct {
	Model   string
	Version string // the version served after the reload ("" if none)
	Changed bool   // a new version was swapped in
	Err     error  // the load error; the previous version keeps serving
}

// Reload re-reads every model directory and swaps in each model whose
// MLmodel hash differs from the served version (or that has none yet). In
// flight requests finish on the model they started with. It returns one
// result per model, sorted by name, and the first error (joined) so that a
// caller polling in a loop can log and carry on.
func (s *Server) Reload(ctx context.Context) ([]ReloadResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ents := s.sorted()
	res := make([]ReloadResult, 0, len(ents))
	var errs []error
	for _, e := range ents {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		r := ReloadResult{Model: e.name}
		cur := e.cur.Load()
		if cur != nil {
			r.Version = cur.version
		}
		v, err := artifact.Version(e.dir)
		if err == nil && cur != nil && v == cur.version {
			res = append(res, r)
			continue
		}
		var l *loaded
		if err == nil {
			l, err = s.read(e.dir, e.name)
		}
		if err != nil {
			r.Err = err
			errs = append(errs, fmt.Errorf("model %s: %w", e.name, err))
			e.fail(err)
			s.met.reloads.WithLabelValues(e.name, "error").Inc()
			s.log.Warn("model reload failed; previous version keeps serving", "model", e.name, "serving", r.Version, "error", err)
			res = append(res, r)
			continue
		}
		s.swap(e, l)
		r.Version, r.Changed = l.version, true
		res = append(res, r)
	}
	return res, errors.Join(errs...)
}

// Watch calls Reload every interval until ctx is done. before, when not
// nil, runs before each Reload (carbonserve re-fetches S3 models there);
// its error is logged and the Reload still runs.
func (s *Server) Watch(ctx context.Context, interval time.Duration, before func(context.Context) error) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if before != nil {
			if err := before(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("before reload", "error", err)
			}
		}
		if _, err := s.Reload(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("reload", "error", err)
		}
	}
}
