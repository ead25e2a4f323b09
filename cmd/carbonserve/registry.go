package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/carbongate/carbongate/cmd/internal/cli"
	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/retry"
	"github.com/carbongate/carbongate/models/artifact"
	"github.com/carbongate/carbongate/models/serve"
	"github.com/carbongate/carbongate/oip"
	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/fetch"
	"github.com/carbongate/carbongate/registry/mlflowclient"
	"github.com/carbongate/carbongate/registry/s3"
	"github.com/carbongate/carbongate/registry/watch"
)

// Registry mode: carbonserve --model models:/NAME@ALIAS serves one version
// of a registered model from an MLflow-compatible registry (a real MLflow
// server or carbongate's) and follows the reference: when the alias moves
// (or, for models:/NAME/latest and models:/NAME/STAGE, a newer version
// appears) it fetches the new version and swaps it in through the server's
// hot-reload path, without dropping a request. The model's OIP version is
// the registry's version number.

// DefaultRegistryPoll is the default of --registry-poll.
const DefaultRegistryPoll = time.Second

// registryCallTimeout bounds one registry call.
const registryCallTimeout = 10 * time.Second

// RegistryConfig is the registry mode's configuration.
type RegistryConfig struct {
	// Model is the models:/ URI to serve ("" = registry mode off).
	Model string
	// URI is the registry's base URL (default $MLFLOW_TRACKING_URI); Token
	// its bearer token ($MLFLOW_TRACKING_TOKEN).
	URI, Token string
	// ArtifactsDestination is what mlflow-artifacts:/ locations map to
	// (the MLflow server's --artifacts-destination).
	ArtifactsDestination string
	// Fetch holds --artifact-sources and --artifact-max-bytes: the other
	// locations versions may be fetched from, and how much.
	Fetch fetch.Fetcher
	// PollInterval is how often the registry is read for a new version.
	PollInterval time.Duration
	// Store, when set, is used instead of a client of URI (tests).
	Store registry.Store
}

// registryFlags declares the registry mode's flags on fs, with defaults
// from the environment MLflow's clients read. S3 settings come from the
// same environment as for --model_dir s3://…, plus MLflow's
// $MLFLOW_S3_ENDPOINT_URL when no other endpoint is set.
func (m *Main) registryFlags(fs *flag.FlagSet) {
	r := &m.Registry
	if r.URI == "" {
		r.URI = m.Getenv("MLFLOW_TRACKING_URI")
	}
	if r.Token == "" {
		r.Token = m.Getenv("MLFLOW_TRACKING_TOKEN")
	}
	if r.PollInterval == 0 {
		r.PollInterval = DefaultRegistryPoll
	}
	if m.S3.Endpoint == "" {
		m.S3.Endpoint = m.Getenv("MLFLOW_S3_ENDPOINT_URL")
	}
	fs.StringVar(&r.Model, "model", r.Model, "serve a registered model version and follow it: models:/NAME@ALIAS, models:/NAME/latest, models:/NAME/STAGE or models:/NAME/N (excludes --model_dir and --models)")
	fs.StringVar(&r.URI, "registry", r.URI, "the MLflow model registry of --model (an MLflow server or carbongate, http[s]://…); default $MLFLOW_TRACKING_URI")
	cli.Alias(fs, "registry-uri", "registry")
	fs.StringVar(&r.ArtifactsDestination, "artifacts-destination", r.ArtifactsDestination, "where mlflow-artifacts:/ locations live (the MLflow server's --artifacts-destination, e.g. s3://bucket/mlartifacts); versions are fetched from under it")
	r.Fetch.Flags(fs)
	fs.DurationVar(&r.PollInterval, "registry-poll", r.PollInterval, "how often --model reads the registry for a newly promoted version")
	cli.Alias(fs, "registry-poll-interval", "registry-poll")
}

// follower is the state of the registry mode. Only the loader goroutine
// touches it after Run.
type follower struct {
	ref     registry.ModelRef
	store   registry.Store
	owned   bool   // store is ours to close
	name    string // served name
	root    string // the version directories
	current string // root/current: a symlink to the served version's directory
	served  int64  // the version served (0: none yet)
	dir     string // its directory
	failed  int64  // the last version that could not be served for its own fault, not retried
	missing bool   // the alias was gone at the last read (logged once; the watcher's goroutine)
	labels  *versionLabels
}

// checkRegistry validates the registry mode's flags and opens its store
// (no call is made).
func (m *Main) checkRegistry() error {
	r := m.Registry
	if m.ModelDir != "" || m.ModelsDir != "" {
		return errors.New("--model excludes --model_dir and --models")
	}
	ref, err := registry.ParseModelURI(r.Model)
	if err != nil {
		return fmt.Errorf("--model: %s", forecast.ErrorMessage(err))
	}
	if r.PollInterval <= 0 {
		return fmt.Errorf("--registry-poll %v must be positive", r.PollInterval)
	}
	f := &follower{ref: ref, store: r.Store, name: ref.Name, labels: &versionLabels{}}
	if m.ModelName != "" {
		f.name = m.ModelName
	}
	if f.store == nil {
		if r.URI == "" {
			return errors.New("--model needs --registry or $MLFLOW_TRACKING_URI")
		}
		c, err := mlflowclient.New(r.URI, mlflowclient.Options{Token: r.Token, Timeout: registryCallTimeout})
		if err != nil {
			return fmt.Errorf("--registry: %s", forecast.ErrorMessage(err))
		}
		f.store, f.owned = c, true
	}
	m.reg = f
	return nil
}

// backend is what the transports serve: the server itself, or in registry
// mode the server with registry version numbers as OIP versions.
func (m *Main) backend() oip.Backend {
	if m.reg == nil {
		return m.Backend
	}
	return &registryBackend{Backend: m.Backend, name: m.reg.name, labels: m.reg.labels}
}

// loadRegistry resolves the reference (retrying an unreachable registry
// until FetchTimeout), fetches the version and serves it.
func (m *Main) loadRegistry(ctx context.Context) error {
	f := m.reg
	if err := m.prepareCache(f); err != nil {
		return err
	}
	v, err := m.resolveRetrying(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", f.ref, err)
	}
	dir, err := m.fetchVersion(ctx, v)
	if err != nil {
		return err
	}
	if err := f.point(dir); err != nil {
		return err
	}
	if _, err := m.Backend.Add(ctx, serve.Source{Name: f.name, Dir: f.current}); err != nil {
		return fmt.Errorf("%s version %d: %w", f.ref.Name, v.Version, err)
	}
	f.served, f.dir = v.Version, dir
	m.Logger.Info("serving registered model", "model", f.name, "ref", f.ref.String(), "version", v.Version, "location", v.ArtifactLocation())
	return nil
}

// prepareCache makes the directory the versions are fetched into.
func (m *Main) prepareCache(f *follower) error {
	if m.CacheDir == "" {
		tmp, err := os.MkdirTemp("", "carbonserve-")
		if err != nil {
			return err
		}
		m.CacheDir, m.tmpCache = tmp, tmp
	}
	// Names may hold anything but '/' and ':': escape them into one safe
	// path component.
	f.root = filepath.Join(m.CacheDir, "registry", "m-"+url.PathEscape(f.ref.Name))
	f.current = filepath.Join(f.root, "current")
	return os.MkdirAll(f.root, 0o755)
}

// resolveRetrying resolves the reference, retrying EUNAVAILABLE errors
// with backoff and jitter (replicas started together against a restarted
// registry do not retry together) until FetchTimeout.
func (m *Main) resolveRetrying(ctx context.Context) (registry.ModelVersion, error) {
	f := m.reg
	rctx, cancel := context.WithTimeout(ctx, m.FetchTimeout)
	defer cancel()
	p := retry.Policy{
		Base: 250 * time.Millisecond, Cap: 5 * time.Second,
		Retryable: func(err error) bool { return forecast.ErrorCode(err) == forecast.EUNAVAILABLE },
		OnRetry: func(_ int, pause time.Duration, err error) {
			m.Logger.Warn("registry unavailable; retrying", "ref", f.ref.String(), "retry_in", pause.String(), "error", err)
		},
	}
	var v registry.ModelVersion
	var last error
	// Each call has ctx's deadline, as before; FetchTimeout bounds the
	// retries, and once it is spent the last answer is returned.
	err := p.Do(rctx, func(context.Context) error {
		v, last = registry.Resolve(ctx, f.store, f.ref)
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
func (m *Main) fetchVersion(ctx context.Context, v registry.ModelVersion) (string, error) {
	f := m.reg
	fe := m.Registry.Fetch
	fe.ArtifactsDestination = m.Registry.ArtifactsDestination
	loc, err := fe.Resolve(v.ArtifactLocation())
	if err != nil {
		return "", err
	}
	if s3.IsURI(loc) {
		if m.s3c == nil {
			if m.s3c, err = s3.NewClient(m.S3); err != nil {
				return "", err
			}
		}
		fe.S3 = m.s3c
	}
	dir := filepath.Join(f.root, "v"+strconv.FormatInt(v.Version, 10))
	fctx, cancel := context.WithTimeout(ctx, m.FetchTimeout)
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
	m.Logger.Info("fetched model version", "model", v.Name, "version", v.Version, "location", v.ArtifactLocation(), "elapsed_ms", time.Since(t0).Milliseconds())
	return dir, nil
}

// point makes current a symlink to dir, atomically: a reader sees the old
// directory or the new one.
func (f *follower) point(dir string) error {
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

// followRegistry follows the reference until ctx ends: an alias through
// registry/watch, latest and stages by polling; a version number is
// fixed. A registry that cannot be read is logged and the served version
// stays; a promotion that failed for a transient reason (registry or S3
// unavailable) is retried every PollInterval.
func (m *Main) followRegistry(ctx context.Context) {
	f := m.reg
	defer func() {
		if f.owned {
			f.store.Close()
		}
	}()
	if f.ref.Alias == "" && !f.ref.Latest && f.ref.Stage == "" {
		return
	}
	targets := make(chan int64, 1)
	var wg sync.WaitGroup
	defer wg.Wait()
	if f.ref.Alias != "" {
		w := watch.New(f.store, watch.Config{Interval: m.Registry.PollInterval, Timeout: registryCallTimeout, Logger: m.Logger})
		wg.Go(func() { _ = w.Run(ctx, func(snap []registry.AliasTarget) { m.onAliases(snap, targets) }) })
	}
	t := time.NewTicker(m.Registry.PollInterval)
	defer t.Stop()
	var want int64
	for {
		select {
		case <-ctx.Done():
			return
		case want = <-targets:
		case <-t.C:
			if f.ref.Alias == "" {
				want = m.resolveLatest(ctx)
			}
		}
		if want > 0 {
			m.promote(ctx, want)
		}
	}
}

// resolveLatest returns the version latest or the stage names now, 0 when
// the registry cannot say.
func (m *Main) resolveLatest(ctx context.Context) int64 {
	f := m.reg
	v, err := registry.Resolve(ctx, f.store, f.ref)
	if err != nil {
		if ctx.Err() == nil {
			m.Logger.Warn("cannot resolve the registered model; the served version stays", "ref", f.ref.String(), "serving", f.served, "error", err)
		}
		return 0
	}
	return v.Version
}

// onAliases hands the version the followed alias points at to the
// follower (replacing one it has not taken yet). It runs on the watcher's
// goroutine.
func (m *Main) onAliases(snap []registry.AliasTarget, targets chan int64) {
	f := m.reg
	for _, t := range snap {
		if t.Name == f.ref.Name && t.Alias == f.ref.Alias {
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
		m.Logger.Warn("the followed alias is gone; the served version stays", "ref", f.ref.String())
	}
}

// promote fetches version n and swaps it in. On failure the served version
// stays; n is tried again at the next call unless the failure was n's own
// (it does not load, its artifacts are missing), which is not retried
// until the reference points elsewhere.
func (m *Main) promote(ctx context.Context, n int64) {
	f := m.reg
	if n == f.served {
		f.failed = 0 // the reference came back: a broken version may be tried again
		return
	}
	if n == f.failed {
		return
	}
	err := m.swapTo(ctx, n)
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		transient := forecast.ErrorCode(err) == forecast.EUNAVAILABLE || errors.Is(err, context.DeadlineExceeded)
		if !transient {
			f.failed = n
		}
		m.Logger.Error("new model version not served; the previous one stays", "ref", f.ref.String(), "version", n,
			"serving", f.served, "retry", transient, "error", err)
		return
	}
	f.failed = 0
	m.Logger.Info("promoted model version", "model", f.name, "ref", f.ref.String(), "version", n)
}

func (m *Main) swapTo(ctx context.Context, n int64) error {
	f := m.reg
	ctx, cancel := context.WithTimeout(ctx, m.FetchTimeout)
	defer cancel()
	v, err := f.store.GetVersion(ctx, f.ref.Name, n)
	if err != nil {
		return err
	}
	dir, err := m.fetchVersion(ctx, v)
	if err != nil {
		return err
	}
	prev := f.dir
	if err := f.point(dir); err != nil {
		return err
	}
	res, err := m.Backend.Reload(ctx)
	for _, r := range res {
		if r.Model == f.name && r.Err != nil {
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

// registryBackend serves a *serve.Server with registry version numbers in
// place of MLmodel hashes for the registered model: in model_version of
// infer responses, in metadata, and in requests naming a version.
type registryBackend struct {
	oip.Backend
	name   string
	labels *versionLabels
}

// in translates a requested version; ENOTFOUND for a registry version
// never fetched.
func (b *registryBackend) in(model, version string) (string, error) {
	if model != b.name || version == "" {
		return version, nil
	}
	h, ok := b.labels.hash(version)
	if !ok {
		return "", forecast.Errorf(forecast.ENOTFOUND, "model %q has no version %q here", model, version)
	}
	return h, nil
}

func (b *registryBackend) ModelReady(ctx context.Context, model, version string) (bool, error) {
	v, err := b.in(model, version)
	if err != nil {
		return false, err
	}
	return b.Backend.ModelReady(ctx, model, v)
}

func (b *registryBackend) ModelMetadata(ctx context.Context, model, version string) (oip.ModelMetadata, error) {
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

func (b *registryBackend) Infer(ctx context.Context, model, version string, req *oip.InferenceRequest) (*oip.InferenceResponse, error) {
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
