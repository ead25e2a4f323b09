// Package live keeps the gateway's in-process models in step with the
// registry: for every registered model carbon-forecaster-<ZONE> (and
// carbon-forecaster-generic) whose alias (champion by default) points at a
// version, it fetches that version's artifacts, loads the model and serves
// it, labelled with the registry version. Promoting a version (setting the
// alias) swaps the model without a restart; calls in flight finish on the
// old one. When the registry cannot be reached the last loaded versions
// keep serving and Status says so.
package live

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models"
	"github.com/carbongate/carbongate/models/artifact"
	"github.com/carbongate/carbongate/registry"
)

// Fetcher copies a version's artifact directory to dst (registry/fetch).
type Fetcher interface {
	Fetch(ctx context.Context, location, dst string) error
}

// WatchFunc calls fn with the registry's alias targets at start and after
// every change until ctx ends (registry/watch's Watcher.Run).
type WatchFunc func(ctx context.Context, fn func([]registry.AliasTarget)) error

// Config configures Models.
type Config struct {
	Store    registry.Store   // required: versions are read from it
	Watch    WatchFunc        // required
	Fetcher  Fetcher          // required
	History  forecast.History // required: the models' input
	CacheDir string           // required: fetched versions, <name>/<version>/
	Alias    string           // default registry.ChampionAlias
	// OnChange is called after a swap with the (zone, signal) pairs whose
	// model changed; zone "" is the generic model (every zone with data).
	OnChange func([]Changed)
	Logger   *slog.Logger
	Timeout  time.Duration // one version's lookup, fetch and load; default 2m
}

// Changed names a model that was swapped, added or removed.
type Changed struct {
	Zone    forecast.Zone // "" for the generic model
	Signal  forecast.Signal
	Version string // "" when removed
}

type key struct {
	zone   forecast.Zone
	signal forecast.Signal
}

// loaded is one serving model.
type loaded struct {
	name    string
	version int64
	key     key
	fc      *models.Forecaster
}

// Models serves the registry's aliased versions. Safe for concurrent use.
type Models struct {
	cfg    Config
	log    *slog.Logger
	cur    atomic.Pointer[map[key]*loaded]
	syncMu sync.Mutex // serialises syncs; guards byN
	byN    map[string]*loaded
	mu     sync.Mutex // guards stat
	stat   Status
}

// Status is what /readyz reports about the registry.
type Status struct {
	Synced   time.Time // last sync that loaded every aliased version; zero before the first
	Err      error     // the last sync's load error, nil when every version loaded
	Failed   string    // the model whose version failed with Err
	FailedV  int64     // and that version
	ReadErr  error     // the last read of the alias table failed (database down)
	Versions map[string]int64
}

// New validates cfg. Run starts following the registry.
func New(cfg Config) (*Models, error) {
	if cfg.Store == nil || cfg.Watch == nil || cfg.Fetcher == nil || cfg.History == nil || cfg.CacheDir == "" {
		return nil, forecast.Errorf(forecast.EINVALID, "live: Store, Watch, Fetcher, History and CacheDir are required")
	}
	if cfg.Alias == "" {
		cfg.Alias = registry.ChampionAlias
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 2 * time.Minute
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &Models{cfg: cfg, log: log, byN: map[string]*loaded{}}
	empty := map[key]*loaded{}
	m.cur.Store(&empty)
	return m, nil
}

// Zone returns the served model of (zone, signal), or nil.
func (m *Models) Zone(zone forecast.Zone, signal forecast.Signal) forecast.Forecaster {
	if l := (*m.cur.Load())[key{zone, signal}]; l != nil {
		return l.fc
	}
	return nil
}

// Generic returns the served generic model of signal, or nil.
func (m *Models) Generic(signal forecast.Signal) forecast.Forecaster { return m.Zone("", signal) }

// Status returns the registry status.
func (m *Models) Status() Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.stat
	s.Versions = make(map[string]int64, len(s.Versions))
	for n, v := range m.stat.Versions {
		s.Versions[n] = v
	}
	return s
}

// Read records the outcome of a read of the alias table (the watcher's
// OnRead hook): while reads fail the loaded models keep serving and Status
// says so.
func (m *Models) Read(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stat.ReadErr = err
}

// Run follows the registry until ctx ends.
func (m *Models) Run(ctx context.Context) error {
	return m.cfg.Watch(ctx, func(targets []registry.AliasTarget) { m.Sync(ctx, targets) })
}

// Sync loads the versions targets point at (alias Config.Alias of
// carbon-forecaster-* models) and drops models whose alias is gone. A
// version that fails to load is logged and its previous version keeps
// serving.
func (m *Models) Sync(ctx context.Context, targets []registry.AliasTarget) {
	m.syncMu.Lock()
	defer m.syncMu.Unlock()
	want := map[string]int64{}
	for _, t := range targets {
		if t.Alias == m.cfg.Alias && strings.HasPrefix(t.Name, models.NamePrefix) {
			want[t.Name] = t.Version
		}
	}
	next := map[string]*loaded{}
	var changed []Changed
	var firstErr error
	var failed string
	for name, v := range want {
		if l := m.byN[name]; l != nil && l.version == v {
			next[name] = l
			continue
		}
		l, err := m.load(ctx, name, v)
		if err != nil {
			m.log.Error("promoted version not loaded; the previous one keeps serving", "model", name, "version", v, "error", err)
			if firstErr == nil {
				firstErr, failed = err, name
			}
			if old := m.byN[name]; old != nil {
				next[name] = old
			}
			continue
		}
		next[name] = l
		changed = append(changed, Changed{Zone: l.key.zone, Signal: l.key.signal, Version: strconv.FormatInt(v, 10)})
		m.log.Info("model version serving", "model", name, "version", v, "zone", l.key.zone, "signal", l.key.signal)
	}
	for name, l := range m.byN {
		if next[name] == nil {
			changed = append(changed, Changed{Zone: l.key.zone, Signal: l.key.signal})
			m.log.Info("alias removed; the model no longer serves", "model", name, "version", l.version)
		}
	}
	m.byN = next
	cur := make(map[key]*loaded, len(next))
	for _, l := range next {
		cur[l.key] = l
	}
	m.cur.Store(&cur)
	versions := make(map[string]int64, len(next))
	for n, l := range next {
		versions[n] = l.version
	}
	m.mu.Lock()
	m.stat.Err, m.stat.Failed, m.stat.FailedV, m.stat.Versions = firstErr, failed, want[failed], versions
	if firstErr == nil {
		m.stat.Synced = time.Now()
	}
	m.mu.Unlock()
	if len(changed) > 0 && m.cfg.OnChange != nil {
		m.cfg.OnChange(changed)
	}
}

// load fetches and loads one version, checking that the model fits its
// registered name. A copy that does not load is removed.
func (m *Models) load(ctx context.Context, name string, version int64) (*loaded, error) {
	ctx, cancel := context.WithTimeout(ctx, m.cfg.Timeout)
	defer cancel()
	mv, err := m.cfg.Store.GetVersion(ctx, name, version)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(m.cfg.CacheDir, name, strconv.FormatInt(version, 10))
	if err := m.cfg.Fetcher.Fetch(ctx, mv.ArtifactLocation(), dir); err != nil {
		return nil, err
	}
	l, err := m.open(dir, name, version)
	if err != nil {
		if rerr := os.RemoveAll(dir); rerr != nil {
			m.log.Warn("removing a copy that did not load", "model", name, "version", version, "error", rerr)
		}
		return nil, err
	}
	return l, nil
}

// open loads the model fetched into dir as version of name.
func (m *Models) open(dir, name string, version int64) (*loaded, error) {
	mdl, err := artifact.Load(dir)
	if err != nil {
		return nil, err
	}
	meta := mdl.Meta()
	zone := forecast.Zone(strings.TrimPrefix(name, models.NamePrefix))
	source := forecast.SourceZone
	if name == models.GenericName {
		zone, source = "", forecast.SourceGeneric
	}
	if meta.Zone != zone {
		return nil, forecast.Errorf(forecast.EINVALID, "%s version %d holds a model of zone %q", name, version, meta.Zone)
	}
	fc := models.NewForecaster(mdl, m.cfg.History, strconv.FormatInt(version, 10), source)
	return &loaded{name: name, version: version, key: key{zone, meta.Signal}, fc: fc}, nil
}

// String describes the status for /readyz, which anyone may read: it
// says what failed (the model, the version, the kind of error) but never
// an error's message, which may name paths or URIs; Sync logs those.
func (s Status) String() string {
	if s.ReadErr != nil {
		return fmt.Sprintf("registry unreachable (%s); serving the %d versions loaded before", forecast.ErrorSummary(s.ReadErr), len(s.Versions))
	}
	if s.Err != nil {
		what := fmt.Sprintf("%s version %d: %s; see the log", s.Failed, s.FailedV, forecast.ErrorSummary(s.Err))
		if s.Synced.IsZero() {
			return "registry models not loaded yet (" + what + "); serving without them"
		}
		return fmt.Sprintf("a promoted version failed to load (%s); serving the versions loaded at %s", what, s.Synced.UTC().Format(time.RFC3339))
	}
	if s.Synced.IsZero() {
		return "registry not read yet"
	}
	return fmt.Sprintf("ok: %d models from the registry", len(s.Versions))
}
