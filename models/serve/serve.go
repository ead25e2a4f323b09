// Package serve is carbonserve's model server core: an oip.Backend that
// serves many carbongate models (MLflow model directories, see
// models/artifact) by name under the forecaster tensor contract, with
// per-model readiness, hot reload and Prometheus metrics. The transports
// (oip/rest, oip/grpc) serve a *Server; this package knows no wire format.
//
// Outputs. Every model answers forecast FP32 [B, H]; a models.IntervalModel
// (e.g. a ridge model with a calibrated interval) also answers lower and
// upper FP32 [B, H] and declares them in its metadata. A request naming
// outputs gets exactly those; one naming none gets all of the model's.
//
// Names and versions. A model is served under the registered name in its
// MLmodel (carbon-forecaster-<ZONE> or carbon-forecaster-generic) unless
// the Source overrides it. Its version is the first 12 hex digits of the
// SHA-256 of the MLmodel file: the file embeds data_sha256 of the weights
// and model_uuid, so any retrained or re-saved model gets a new version, and
// the same files give the same version on every replica.
//
// Hot reload. Each model is held behind an atomic pointer. Reload re-reads
// the model directories and, for each whose MLmodel hash changed, loads the
// new model and swaps the pointer: requests that already hold the old model
// finish on it, later requests see the new one, and none is refused. A
// directory that fails to load (for instance while it is being replaced)
// keeps the old model serving; the error is returned and counted.
package serve

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models"
	"github.com/carbongate/carbongate/models/artifact"
	"github.com/carbongate/carbongate/models/workflow"
	"github.com/carbongate/carbongate/oip"
)

// Defaults of Config.
const (
	DefaultMaxBatch = 1024
	DefaultName     = "carbonserve"
	Platform        = "carbongate"
)

// Tensor names of the forecaster contract.
const (
	InputHistory   = "history"
	InputStart     = "start_unix"
	OutputForecast = "forecast"
)

// Source is one model to serve: a local MLflow model directory and the name
// to serve it under ("" = the registered name in its MLmodel).
type Source struct {
	Name string
	Dir  string
}

// Config configures a Server. Zero fields take the documented defaults.
type Config struct {
	ServerName    string // ServerMetadata name; default "carbonserve"
	ServerVersion string // ServerMetadata version; default "dev"
	MaxBatch      int    // largest B accepted by Infer; default DefaultMaxBatch
	// Load reads a model directory; default artifact.Load.
	Load func(dir string) (models.Model, error)
	// Metrics, when set, registers the server's collectors.
	Metrics prometheus.Registerer
	Logger  *slog.Logger
}

// Server is an oip.Backend over carbongate models. It is safe for
// concurrent use; the zero value is not: use New.
type Server struct {
	name, version string
	maxBatch      int
	load          func(dir string) (models.Model, error)
	log           *slog.Logger
	met           *metrics

	mu      sync.Mutex // serialises Add and Reload
	entries atomic.Pointer[map[string]*entry]
	drain   atomic.Bool
	scratch sync.Pool // *buffers
}

var (
	_ oip.Backend  = (*Server)(nil)
	_ oip.Limiter  = (*Server)(nil)
	_ oip.Observer = (*Server)(nil)
)

// entry is one served name. cur is nil while the model is loading or when
// its first load failed.
type entry struct {
	name    string
	dir     string
	cur     atomic.Pointer[loaded]
	lastErr atomic.Pointer[string]
}

// loaded is an immutable loaded model.
type loaded struct {
	model   models.Model
	meta    models.Meta
	version string
	limits  oip.Limits // of the name it serves under, at the server's MaxBatch
}

// New returns a Server with no models; add them with Add.
func New(cfg Config) (*Server, error) {
	s := &Server{name: cfg.ServerName, version: cfg.ServerVersion, maxBatch: cfg.MaxBatch, load: cfg.Load, log: cfg.Logger}
	if s.name == "" {
		s.name = DefaultName
	}
	if s.version == "" {
		s.version = "dev"
	}
	if s.maxBatch == 0 {
		s.maxBatch = DefaultMaxBatch
	}
	if s.maxBatch < 1 {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "max_batch", "max batch %d must be at least 1", cfg.MaxBatch)
	}
	if s.load == nil {
		s.load = artifact.Load
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	var err error
	if s.met, err = newMetrics(cfg.Metrics); err != nil {
		return nil, err
	}
	empty := map[string]*entry{}
	s.entries.Store(&empty)
	return s, nil
}

// Add loads the model in src.Dir and serves it. While it loads the name is
// known and not ready. It returns the served name, ECONFLICT when the name
// is already served, and the load error (the name then stays known and not
// ready, and Reload retries it).
func (s *Server) Add(ctx context.Context, src Source) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	name := src.Name
	var (
		l   *loaded
		err error
	)
	if name == "" {
		// The name lives in the MLmodel: load before registering.
		l, err = s.read(src.Dir, "")
		if err != nil {
			return "", err
		}
		name = l.meta.Name
		if name == "" {
			return "", forecast.Errorf(forecast.EINVALID, "model directory %s has no registered name; give one", filepath.Base(src.Dir))
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old := *s.entries.Load()
	if _, dup := old[name]; dup {
		return "", forecast.Errorf(forecast.ECONFLICT, "model %q is already served", name)
	}
	e := &entry{name: name, dir: src.Dir}
	next := make(map[string]*entry, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	next[name] = e
	s.entries.Store(&next)
	s.met.ready.WithLabelValues(name).Set(0)
	if l == nil {
		l, err = s.read(src.Dir, name)
	}
	if err != nil {
		e.fail(err)
		s.met.reloads.WithLabelValues(name, "error").Inc()
		return name, err
	}
	s.swap(e, l)
	return name, nil
}

// read loads the model in dir and computes its version and metadata. The
// MLmodel hash is taken before and after loading so that a directory
// replaced mid-load is not labelled with the wrong version.
func (s *Server) read(dir, name string) (*loaded, error) {
	for attempt := 0; ; attempt++ {
		v1, err := artifact.Version(dir)
		if err != nil {
			return nil, err
		}
		m, err := s.load(dir)
		if err != nil {
			return nil, err
		}
		v2, err := artifact.Version(dir)
		if err != nil {
			return nil, err
		}
		if v1 != v2 {
			if attempt < 3 {
				continue
			}
			return nil, forecast.Errorf(forecast.EUNAVAILABLE, "model directory %s keeps changing while it loads", filepath.Base(dir))
		}
		meta := m.Meta()
		if name == "" {
			name = meta.Name
		}
		if meta.Lookback < 1 || meta.Horizon < 1 {
			return nil, forecast.Errorf(forecast.EINVALID, "model %s: lookback %d and horizon %d must be positive", name, meta.Lookback, meta.Horizon)
		}
		limits := metadata(name, v1, m).Limits(s.maxBatch)
		return &loaded{model: m, meta: meta, version: v1, limits: limits}, nil
	}
}

// metadata declares the forecaster contract of m: inputs history FP32
// [-1, L] and start_unix INT64 [-1, 1], output forecast FP32 [-1, H], and
// outputs lower and upper FP32 [-1, H] when m is a models.IntervalModel.
func metadata(name, version string, m models.Model) oip.ModelMetadata {
	meta := m.Meta()
	md := oip.Contract{Lookback: meta.Lookback, Horizon: meta.Horizon}.Metadata(name, []string{version}, Platform)
	outs := md.Outputs[:0]
	for _, o := range md.Outputs {
		if hasOutput(m, o.Name) {
			outs = append(outs, o)
		}
	}
	md.Outputs = outs
	return md
}

// hasOutput reports whether m answers the output named name: forecast
// always, lower and upper when m is a models.IntervalModel.
func hasOutput(m models.Model, name string) bool {
	switch name {
	case oip.OutputForecast:
		return true
	case oip.OutputLower, oip.OutputUpper:
		_, ok := m.(models.IntervalModel)
		return ok
	}
	return false
}

func (s *Server) swap(e *entry, l *loaded) {
	prev := e.cur.Swap(l)
	e.lastErr.Store(nil)
	s.met.ready.WithLabelValues(e.name).Set(1)
	if prev != nil {
		s.met.info.DeleteLabelValues(e.name, prev.version)
	}
	s.met.info.WithLabelValues(e.name, l.version).Set(1)
	s.met.reloads.WithLabelValues(e.name, "ok").Inc()
	from := ""
	if prev != nil {
		from = prev.version
	}
	s.log.Info("model loaded", "model", e.name, "version", l.version, "previous", from,
		"family", l.meta.Family, "zone", string(l.meta.Zone), "signal", string(l.meta.Signal),
		"lookback", l.meta.Lookback, "horizon", l.meta.Horizon)
}

func (e *entry) fail(err error) {
	msg := forecast.ErrorMessage(err)
	e.lastErr.Store(&msg)
}

func (s *Server) sorted() []*entry {
	m := *s.entries.Load()
	out := make([]*entry, 0, len(m))
	for _, e := range m {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// Status is the state of one served model.
type Status struct {
	Name    string
	Dir     string
	Ready   bool
	Version string
	Meta    models.Meta
	Error   string // the last load error, "" after a successful load
}

// Models returns the status of every model, sorted by name.
func (s *Server) Models() []Status {
	ents := s.sorted()
	out := make([]Status, 0, len(ents))
	for _, e := range ents {
		st := Status{Name: e.name, Dir: e.dir}
		if l := e.cur.Load(); l != nil {
			st.Ready, st.Version, st.Meta = true, l.version, l.meta
		}
		if m := e.lastErr.Load(); m != nil {
			st.Error = *m
		}
		out = append(out, st)
	}
	return out
}

// Drain makes ServerReady report false from now on (models keep serving):
// the first step of a graceful shutdown.
func (s *Server) Drain() { s.drain.Store(true) }

// ServerMetadata implements oip.Backend.
func (s *Server) ServerMetadata(context.Context) (oip.ServerMetadata, error) {
	return oip.ServerMetadata{Name: s.name, Version: s.version}, nil
}

// ServerLive implements oip.Backend: always live.
func (s *Server) ServerLive(context.Context) (bool, error) { return true, nil }

// ServerReady implements oip.Backend: ready when not draining, at least one
// model is served and every model is ready.
func (s *Server) ServerReady(context.Context) (bool, error) {
	if s.drain.Load() {
		return false, nil
	}
	m := *s.entries.Load()
	if len(m) == 0 {
		return false, nil
	}
	for _, e := range m {
		if e.cur.Load() == nil {
			return false, nil
		}
	}
	return true, nil
}

// lookup returns the entry of model, ENOTFOUND when unknown.
func (s *Server) lookup(model string) (*entry, error) {
	e, ok := (*s.entries.Load())[model]
	if !ok {
		return nil, forecast.Errorf(forecast.ENOTFOUND, "model %q is not served here", model)
	}
	return e, nil
}

// current returns the loaded model of e at version: EUNAVAILABLE while
// loading, ENOTFOUND for a version other than the served one.
func current(e *entry, version string) (*loaded, error) {
	l := e.cur.Load()
	if l == nil {
		msg := "is loading"
		if m := e.lastErr.Load(); m != nil {
			msg = "failed to load: " + *m
		}
		return nil, forecast.Errorf(forecast.EUNAVAILABLE, "model %q %s", e.name, msg)
	}
	if version != "" && version != l.version {
		return nil, forecast.Errorf(forecast.ENOTFOUND, "model %q has no version %q (serving %s)", e.name, version, l.version)
	}
	return l, nil
}

// ModelReady implements oip.Backend: (false, nil) while the model loads,
// ENOTFOUND for an unknown model or version.
func (s *Server) ModelReady(_ context.Context, model, version string) (bool, error) {
	e, err := s.lookup(model)
	if err != nil {
		return false, err
	}
	l := e.cur.Load()
	if l == nil {
		return false, nil
	}
	if version != "" && version != l.version {
		return false, forecast.Errorf(forecast.ENOTFOUND, "model %q has no version %q (serving %s)", model, version, l.version)
	}
	return true, nil
}

// InferLimits implements oip.Limiter: the declared inputs of the served
// version with at most MaxBatch rows. ENOTFOUND for an unknown model or
// version, EUNAVAILABLE while the model loads (as Infer). It does not count
// the request: the transport calls InferRejected or Infer after it.
func (s *Server) InferLimits(_ context.Context, model, version string) (oip.Limits, error) {
	_, l, err := s.served(model, version)
	if err != nil {
		return oip.Limits{}, err
	}
	return l.limits, nil
}

// served returns the entry of model and its loaded version: lookup, then
// current.
func (s *Server) served(model, version string) (*entry, *loaded, error) {
	e, err := s.lookup(model)
	if err != nil {
		return nil, nil, err
	}
	l, err := current(e, version)
	if err != nil {
		return nil, nil, err
	}
	return e, l, nil
}

// InferRejected implements oip.Observer: it counts in
// carbonserve_infer_requests_total an infer request that a transport
// answered with err without calling Infer (status: the error code; an
// unknown model under "_unknown", as Infer does).
func (s *Server) InferRejected(model string, err error) {
	if _, lerr := s.lookup(model); lerr != nil {
		model = unknownModel
	}
	s.met.requests.WithLabelValues(model, forecast.ErrorCode(err)).Inc()
}

// ModelMetadata implements oip.Backend. The metadata of a loading model is
// not known yet: EUNAVAILABLE.
func (s *Server) ModelMetadata(_ context.Context, model, version string) (oip.ModelMetadata, error) {
	e, l, err := s.served(model, version)
	if err != nil {
		return oip.ModelMetadata{}, err
	}
	return metadata(e.name, l.version, l.model), nil // a fresh copy the caller may keep
}

// Discover lists the model directories under root: root itself when it
// holds an MLmodel; else each child directory holding one (a flat layout);
// and, in each child named after a signal (the <signal>/<ZONE>/ layout
// carbonctl train writes), each grandchild holding one. signal, when not
// "", keeps only that signal's subtree, so that the zone models of two
// signals, which share registered names, are not served together. Sources
// have no Name: each serves under its registered name. ENOTFOUND when root
// does not exist or holds no model.
func Discover(root string, signal forecast.Signal) ([]Source, error) {
	if isModelDir(root) {
		return []Source{{Dir: root}}, nil
	}
	kids, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, forecast.Errorf(forecast.ENOTFOUND, "models directory %s does not exist", filepath.Base(root))
	} else if err != nil {
		return nil, err
	}
	var out []Source
	for _, k := range kids {
		if !k.IsDir() || k.Name()[0] == '.' {
			continue
		}
		dir := filepath.Join(root, k.Name())
		if isModelDir(dir) {
			out = append(out, Source{Dir: dir})
		}
	}
	entries, err := workflow.Entries(root, signal)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if isModelDir(e.Dir) {
			out = append(out, Source{Dir: e.Dir})
		}
	}
	if len(out) == 0 {
		return nil, forecast.Errorf(forecast.ENOTFOUND, "no model directories (with an %s file) under %s", artifact.MLmodelFile, filepath.Base(root))
	}
	return out, nil
}

func isModelDir(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, artifact.MLmodelFile))
	return err == nil && st.Mode().IsRegular()
}
