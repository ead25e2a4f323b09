// Package follow serves one registered model version through a
// models/serve Server and follows its reference (registry.ModelRef): when
// the alias moves (or, for models:/NAME/latest and models:/NAME/STAGE, a
// newer version appears) it fetches the new version and swaps it in
// through the server's hot-reload path, without dropping a request. The
// model's OIP version is the registry's version number (Backend). It is
// carbonserve's registry mode; carbongate follows aliases for many models
// at once with gateway/live.
package follow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/internal/retry"
	"github.com/carbongate/carbongate/models/artifact"
	"github.com/carbongate/carbongate/models/serve"
	"github.com/carbongate/carbongate/oip"
	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/fetch"
	"github.com/carbongate/carbongate/registry/s3"
	"github.com/carbongate/carbongate/registry/watch"
)

// DefaultCallTimeout bounds one registry call.
const DefaultCallTimeout = 10 * time.Second

// Server is what versions are served through: *serve.Server.
type Server interface {
	Add(ctx context.Context, src serve.Source) (string, error)
	Reload(ctx context.Context) ([]serve.ReloadResult, error)
}

// Config configures a Follower.
type Config struct {
	Ref        registry.ModelRef // required: what to serve and follow
	Store      registry.Store    // required: the registry
	CloseStore bool              // Run closes Store when it returns
	Name       string            // the served model name; default Ref.Name
	// Fetch fetches version artifacts (its ArtifactsDestination and
	// allowed sources set); S3 makes the S3 client on the first s3://
	// location.
	Fetch        fetch.Fetcher
	S3           func() (*minio.Client, error)
	FetchTimeout time.Duration // one fetch, and the retries of the first resolution; required
	PollInterval time.Duration // how often latest and stages are re-read, and aliases without notifications; required
	CallTimeout  time.Duration // one registry call; default DefaultCallTimeout
	Logger       *slog.Logger  // nil: discard
}

// Follower serves a registered model version and follows its reference.
// After Load only Run's goroutine changes it.
type Follower struct {
	cfg     Config
	server  Server
	root    string // the version directories
	current string // root/current: a symlink to the served version's directory
	served  int64  // the version served (0: none yet)
	dir     string // its directory
	failed  int64  // the last version that could not be served for its own fault, not retried
	missing bool   // the alias was gone at the last read (logged once; the watcher's goroutine)
	labels  *versionLabels
}

// New checks cfg and returns a Follower; nothing is called or written yet.
func New(cfg Config) (*Follower, error) {
	switch {
	case cfg.Store == nil || cfg.Ref.Name == "":
		return nil, errors.New("follow: Ref and Store are required")
	case cfg.PollInterval <= 0 || cfg.FetchTimeout <= 0:
		return nil, fmt.Errorf("follow: poll interval %v and fetch timeout %v must be positive", cfg.PollInterval, cfg.FetchTimeout)
	}
	if cfg.Name == "" {
		cfg.Name = cfg.Ref.Name
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = DefaultCallTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.S3 == nil {
		cfg.S3 = func() (*minio.Client, error) { return nil, errors.New("follow: no S3 client configured") }
	}
	return &Follower{cfg: cfg, labels: &versionLabels{}}, nil
}

// Name is the served model name.
func (f *Follower) Name() string { return f.cfg.Name }

// Ref is the followed reference.
func (f *Follower) Ref() registry.ModelRef { return f.cfg.Ref }

// Backend serves b with registry version numbers in place of MLmodel
// hashes for the followed model.
func (f *Follower) Backend(b oip.Backend) oip.Backend {
	return &versionedBackend{Backend: b, name: f.cfg.Name, labels: f.labels}
}

// Load resolves the reference (retrying an unreachable registry until
// FetchTimeout), fetches the version under cacheDir and serves it through
// server, which Run then swaps versions in.
func (f *Follower) Load(ctx context.Context, server Server, cacheDir string) error {
	f.server = server
	// Names may hold anything but '/' and ':': escape them into one safe
	// path component.
	f.root = filepath.Join(cacheDir, "registry", "m-"+url.PathEscape(f.cfg.Ref.Name))
	f.current = filepath.Join(f.root, "current")
	if err := os.MkdirAll(f.root, 0o755); err != nil {
		return err
	}
	v, err := f.resolveRetrying(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", f.cfg.Ref, err)
	}
	dir, err := f.fetchVersion(ctx, v)
	if err != nil {
		return err
	}
	if err := f.point(dir); err != nil {
		return err
	}
	if _, err := f.server.Add(ctx, serve.Source{Name: f.cfg.Name, Dir: f.current}); err != nil {
		return fmt.Errorf("%s version %d: %w", f.cfg.Ref.Name, v.Version, err)
	}
	f.served, f.dir = v.Version, dir
	f.cfg.Logger.Info("serving registered model", "model", f.cfg.Name, "ref", f.cfg.Ref.String(), "version", v.Version, "location", v.ArtifactLocation())
	return nil
}

// resolveRetrying resolves the reference, retrying EUNAVAILABLE errors
// with backoff and jitter (replicas started together against a restarted
// registry do not retry together) until FetchTimeout.
func (f *Follower) resolveRetrying(ctx context.Context) (registry.ModelVersion, error) {
	rctx, cancel := context.WithTimeout(ctx, f.cfg.FetchTimeout)
	defer cancel()
	p := retry.Policy{
		Base: 250 * time.Millisecond, Cap: 5 * time.Second,
		Retryable: func(err error) bool { return forecast.ErrorCode(err) == forecast.EUNAVAILABLE },
		OnRetry: func(_ int, pause time.Duration, err error) {
			f.cfg.Logger.Warn("registry unavailable; retrying", "ref", f.cfg.Ref.String(), "retry_in", pause.String(), "error", err)
		},
	}
	var v registry.ModelVersion
	var last error
	// Each call has ctx's deadline, as before; FetchTimeout bounds the
	// retries, and once it is spent the last answer is returned.
	err := p.Do(rctx, func(context.Context) error {
		v, last = registry.Resolve(ctx, f.cfg.Store, f.cfg.Ref)
		return last
	})
	switch {
	case err == nil:
		return v, nil
	case ctx.Err() != nil:
		return registry.ModelVersion{}, ctx.Err()
	}
	return registry.ModelVersion{}, last
}

// fetchVersion copies v's artifacts to root/v<N> and labels their MLmodel
// hash with v's number.
func (f *Follower) fetchVersion(ctx context.Context, v registry.ModelVersion) (string, error) {
	fe := f.cfg.Fetch
	loc, err := fe.Resolve(v.ArtifactLocation())
	if err != nil {
		return "", err
	}
	if s3.IsURI(loc) {
		if fe.S3, err = f.cfg.S3(); err != nil {
			return "", err
		}
	}
	dir := filepath.Join(f.root, "v"+strconv.FormatInt(v.Version, 10))
	fctx, cancel := context.WithTimeout(ctx, f.cfg.FetchTimeout)
	defer cancel()
	t0 := time.Now()
	if err := fe.Fetch(fctx, v.ArtifactLocation(), dir); err != nil {
		return "", fmt.Errorf("fetch %s version %d from %s: %w", v.Name, v.Version, v.ArtifactLocation(), err)
	}
	hash, err := artifact.Version(dir)
	if err != nil {
		_ = os.RemoveAll(dir) // not a model: keep no copy
		return "", fmt.Errorf("%s version %d: %w", v.Name, v.Version, err)
	}
	f.labels.set(hash, v.Version)
	f.cfg.Logger.Info("fetched model version", "model", v.Name, "version", v.Version, "location", v.ArtifactLocation(), "elapsed_ms", time.Since(t0).Milliseconds())
	return dir, nil
}

// point makes current a symlink to dir, atomically: a reader sees the old
// directory or the new one.
func (f *Follower) point(dir string) error {
	tmp := f.current + ".new"
	_ = os.Remove(tmp)
	if err := os.Symlink(filepath.Base(dir), tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, f.current); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}

// Run follows the reference until ctx ends: an alias through
// registry/watch, latest and stages by polling; a version number is
// fixed. A registry that cannot be read is logged and the served version
// stays; a promotion that failed for a transient reason (registry or S3
// unavailable) is retried every PollInterval.
func (f *Follower) Run(ctx context.Context) {
	defer func() {
		if f.cfg.CloseStore {
			f.cfg.Store.Close()
		}
	}()
	if f.cfg.Ref.Alias == "" && !f.cfg.Ref.Latest && f.cfg.Ref.Stage == "" {
		return
	}
	targets := make(chan int64, 1)
	var wg sync.WaitGroup
	defer wg.Wait()
	if f.cfg.Ref.Alias != "" {
		w := watch.New(f.cfg.Store, watch.Config{Interval: f.cfg.PollInterval, Timeout: f.cfg.CallTimeout, Logger: f.cfg.Logger})
		wg.Go(func() { _ = w.Run(ctx, func(snap []registry.AliasTarget) { f.onAliases(snap, targets) }) })
	}
	t := time.NewTicker(f.cfg.PollInterval)
	defer t.Stop()
	var want int64
	for {
		select {
		case <-ctx.Done():
			return
		case want = <-targets:
		case <-t.C:
			if f.cfg.Ref.Alias == "" {
				want = f.resolveLatest(ctx)
			}
		}
		if want > 0 {
			f.promote(ctx, want)
		}
	}
}

// resolveLatest returns the version latest or the stage names now, 0 when
// the registry cannot say.
func (f *Follower) resolveLatest(ctx context.Context) int64 {
	v, err := registry.Resolve(ctx, f.cfg.Store, f.cfg.Ref)
	if err != nil {
		if ctx.Err() == nil {
			f.cfg.Logger.Warn("cannot resolve the registered model; the served version stays", "ref", f.cfg.Ref.String(), "serving", f.served, "error", err)
		}
		return 0
	}
	return v.Version
}

// onAliases hands the version the followed alias points at to the
// follower (replacing one it has not taken yet). It runs on the watcher's
// goroutine.
func (f *Follower) onAliases(snap []registry.AliasTarget, targets chan int64) {
	for _, t := range snap {
		if t.Name == f.cfg.Ref.Name && t.Alias == f.cfg.Ref.Alias {
			f.missing = false
			select {
			case <-targets:
			default:
			}
			targets <- t.Version
			return
		}
	}
	if !f.missing {
		f.missing = true
		f.cfg.Logger.Warn("the followed alias is gone; the served version stays", "ref", f.cfg.Ref.String())
	}
}

// promote fetches version n and swaps it in. On failure the served version
// stays; n is tried again at the next call unless the failure was n's own
// (it does not load, its artifacts are missing), which is not retried
// until the reference points elsewhere.
func (f *Follower) promote(ctx context.Context, n int64) {
	if n == f.served {
		f.failed = 0 // the reference came back: a broken version may be tried again
		return
	}
	if n == f.failed {
		return
	}
	err := f.swapTo(ctx, n)
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		transient := forecast.ErrorCode(err) == forecast.EUNAVAILABLE || errors.Is(err, context.DeadlineExceeded)
		if !transient {
			f.failed = n
		}
		f.cfg.Logger.Error("new model version not served; the previous one stays", "ref", f.cfg.Ref.String(), "version", n,
			"serving", f.served, "retry", transient, "error", err)
		return
	}
	f.failed = 0
	f.cfg.Logger.Info("promoted model version", "model", f.cfg.Name, "ref", f.cfg.Ref.String(), "version", n)
}

func (f *Follower) swapTo(ctx context.Context, n int64) error {
	ctx, cancel := context.WithTimeout(ctx, f.cfg.FetchTimeout)
	defer cancel()
	v, err := f.cfg.Store.GetVersion(ctx, f.cfg.Ref.Name, n)
	if err != nil {
		return err
	}
	dir, err := f.fetchVersion(ctx, v)
	if err != nil {
		return err
	}
	prev := f.dir
	if err := f.point(dir); err != nil {
		return err
	}
	res, err := f.server.Reload(ctx)
	for _, r := range res {
		if r.Model == f.cfg.Name && r.Err != nil {
			err = r.Err
		}
	}
	if err != nil {
		_ = f.point(prev) // later reloads keep the served version
		if dir != prev {
			_ = os.RemoveAll(dir) // it did not load: keep no copy
		}
		return err
	}
	f.served, f.dir = n, dir
	if prev != dir {
		_ = os.RemoveAll(prev) // loaded in memory; the files are no longer read
	}
	return nil
}

// versionLabels maps the MLmodel hashes models/serve versions models by
// to registry version numbers, for every version fetched.
type versionLabels struct {
	mu       sync.RWMutex
	byHash   map[string]string
	byNumber map[string]string
}

func (l *versionLabels) set(hash string, n int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byHash == nil {
		l.byHash, l.byNumber = map[string]string{}, map[string]string{}
	}
	num := strconv.FormatInt(n, 10)
	l.byHash[hash], l.byNumber[num] = num, hash
}

// number returns the registry version of hash (hash itself if unknown).
func (l *versionLabels) number(hash string) string {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if n, ok := l.byHash[hash]; ok {
		return n
	}
	return hash
}

// hash returns the MLmodel hash of registry version num.
func (l *versionLabels) hash(num string) (string, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	h, ok := l.byNumber[num]
	return h, ok
}

// versionedBackend serves a *serve.Server with registry version numbers in
// place of MLmodel hashes for the registered model: in model_version of
// infer responses, in metadata, and in requests naming a version.
type versionedBackend struct {
	oip.Backend
	name   string
	labels *versionLabels
}

// in translates a requested version; ENOTFOUND for a registry version
// never fetched.
func (b *versionedBackend) in(model, version string) (string, error) {
	if model != b.name || version == "" {
		return version, nil
	}
	h, ok := b.labels.hash(version)
	if !ok {
		return "", forecast.Errorf(forecast.ENOTFOUND, "model %q has no version %q here", model, version)
	}
	return h, nil
}

func (b *versionedBackend) ModelReady(ctx context.Context, model, version string) (bool, error) {
	v, err := b.in(model, version)
	if err != nil {
		return false, err
	}
	return b.Backend.ModelReady(ctx, model, v)
}

func (b *versionedBackend) ModelMetadata(ctx context.Context, model, version string) (oip.ModelMetadata, error) {
	v, err := b.in(model, version)
	if err != nil {
		return oip.ModelMetadata{}, err
	}
	md, err := b.Backend.ModelMetadata(ctx, model, v)
	if err == nil && model == b.name {
		for i, h := range md.Versions {
			md.Versions[i] = b.labels.number(h)
		}
	}
	return md, err
}

func (b *versionedBackend) Infer(ctx context.Context, model, version string, req *oip.InferenceRequest) (*oip.InferenceResponse, error) {
	v, err := b.in(model, version)
	if err != nil {
		return nil, err
	}
	resp, err := b.Backend.Infer(ctx, model, v, req)
	if resp != nil && model == b.name {
		resp.ModelVersion = b.labels.number(resp.ModelVersion)
	}
	return resp, err
}
