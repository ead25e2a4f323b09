package runtime

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/httpedge"
	"github.com/carbongate/carbongate/gateway/live"
	"github.com/carbongate/carbongate/gateway/wiring"
	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/connect"
	"github.com/carbongate/carbongate/registry/fetch"
	"github.com/carbongate/carbongate/registry/lazy"
	"github.com/carbongate/carbongate/registry/mlflowapi"
	"github.com/carbongate/carbongate/registry/s3"
	"github.com/carbongate/carbongate/registry/watch"
)

// Registry configures the model registry: carbongate serves MLflow's
// registry API over it and serves, in process, the versions its alias
// points at, switching live when the alias moves.
type Registry struct {
	URI       string        // --registry; "" = no registry
	Token     string        // --registry-token; "" = writes are open (warned)
	Alias     string        // --registry-alias
	Poll      time.Duration // --registry-poll
	CacheDir  string        // --registry-cache-dir
	Artifacts string        // --artifacts-destination (mlflow-artifacts:/ root)
	// Fetch holds --artifact-sources and --artifact-max-bytes: where
	// versions may be fetched from, and how much.
	Fetch fetch.Fetcher
}

// registryPart is the Registry of a running carbongate.
type registryPart struct {
	*Registry
	store  *lazy.Store
	models *live.Models
	cancel context.CancelFunc
	done   chan struct{}
}

// open connects (in the background when the database is down) and builds
// the live model set. Start follows the aliases.
func (r *registryPart) open(m *Runtime, hist forecast.History) (wiring.ModelSet, error) {
	if r.URI == "" {
		return nil, nil
	}
	if err := registry.ValidateAlias(r.Alias); err != nil {
		return nil, fmt.Errorf("--registry-alias: %s", forecast.ErrorMessage(err))
	}
	if _, _, err := connect.Parse(r.URI); err != nil {
		return nil, fmt.Errorf("--registry: %s", forecast.ErrorMessage(err))
	}
	if r.Poll <= 0 {
		return nil, fmt.Errorf("--registry-poll must be positive, got %v", r.Poll)
	}
	if r.CacheDir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		r.CacheDir = filepath.Join(base, "carbongate", "registry-models")
	}
	f := r.Fetch
	f.ArtifactsDestination = r.Artifacts
	if r.Artifacts == "" && len(f.Sources) == 0 {
		m.Logger.Warn("no --artifacts-destination or --artifact-sources: no model version can be fetched from the registry")
	}
	if c, err := s3.NewClient(s3.ConfigFromEnv(os.Getenv)); err == nil {
		f.S3 = c
	} else {
		m.Logger.Warn("no S3 client; s3:// model versions will not load", "error", err)
	}
	r.store = lazy.New(func(ctx context.Context) (registry.Store, error) {
		s, _, err := connect.Open(ctx, r.URI, registry.Options{Logger: m.Logger})
		return s, err
	}, r.Poll*5, m.Logger)
	var err error
	var models *live.Models
	w := watch.New(r.store, watch.Config{Interval: r.Poll, Logger: m.Logger, OnRead: func(err error) { models.Read(err) }})
	models, err = live.New(live.Config{
		Store: r.store, Watch: w.Run, Fetcher: f, History: hist, CacheDir: r.CacheDir,
		Alias: r.Alias, Logger: m.Logger,
		OnChange: func(cs []live.Changed) {
			for _, c := range cs {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				if err := m.gw.Recompute(ctx, c.Zone, c.Signal); err != nil {
					m.Logger.Warn("recomputing forecasts after a promotion", "zone", c.Zone, "error", err)
				}
				cancel()
			}
		},
	})
	if err != nil {
		r.store.Close()
		return nil, err
	}
	r.models = models
	if r.Token == "" {
		m.Logger.Warn("registry writes are NOT authenticated: set --registry-token (or $CARBONGATE_REGISTRY_TOKEN) outside a laptop")
	}
	return r.models, nil
}

// mount serves MLflow's registry API on e.
func (r *registryPart) mount(m *Runtime) (func(*echo.Echo), error) {
	if r.store == nil {
		return nil, nil
	}
	api, err := mlflowapi.New(mlflowapi.Config{Store: r.store, Token: r.Token, Logger: m.Logger})
	if err != nil {
		return nil, err
	}
	for _, p := range []string{mlflowapi.PrefixAPI, mlflowapi.PrefixAjax} {
		m.routes = append(m.routes, httpedge.Route{Prefix: p + "/", MaxBody: mlflowapi.DefaultMaxBodyBytes})
	}
	return api.Register, nil
}

// start follows the aliases until Close.
func (r *registryPart) start() {
	if r.models == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel, r.done = cancel, make(chan struct{})
	go func() {
		defer close(r.done)
		_ = r.models.Run(ctx)
	}()
}

// checks reports the registry in /readyz.
func (r *registryPart) checks() map[string]string {
	if r.models == nil {
		return nil
	}
	if !r.store.Connected() {
		const serving = "; serving the models directory, baseline and climatology"
		err := r.store.OpenErr()
		if forecast.ErrorCode(err) == forecast.EINVALID {
			return map[string]string{"registry": "registry refused to open: damaged or of a format this version cannot read (see the log)" + serving}
		}
		return map[string]string{"registry": "database unreachable (" + forecast.ErrorSummary(err) + ")" + serving}
	}
	return map[string]string{"registry": r.models.Status().String()}
}

func (r *registryPart) close() {
	if r.cancel != nil {
		r.cancel()
		<-r.done
	}
	if r.store != nil {
		r.store.Close()
	}
}
