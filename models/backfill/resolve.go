package backfill

import (
	"cmp"
	"context"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models"
	"github.com/carbongate/carbongate/models/artifact"
	"github.com/carbongate/carbongate/models/workflow"
	"github.com/carbongate/carbongate/oip"
	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/fetch"
	"github.com/carbongate/carbongate/registry/s3"
)

// LocalVersion is the model_version of rows from a models directory.
const LocalVersion = "local"

// ZonePlaceholder in a --model or --endpoint template stands for the zone.
const ZonePlaceholder = "{zone}"

// Expand replaces ZonePlaceholder in template by zone.
func Expand(template string, zone forecast.Zone) string {
	return strings.ReplaceAll(template, ZonePlaceholder, string(zone))
}

// FromDir loads each zone's model from a models directory written by
// carbonctl train (see workflow.LoadModels); a zone without its own model
// gets the generic one. Versions are LocalVersion. ENOTFOUND (field
// "models") when a zone has neither.
func FromDir(root string, signal forecast.Signal, zones []forecast.Zone) (map[forecast.Zone]Model, error) {
	zm, generic, err := workflow.LoadModels(root, signal, zones, nil)
	if forecast.ErrorCode(err) == forecast.ENOTFOUND {
		return nil, forecast.FieldErrorf(forecast.ENOTFOUND, "models", "no %s model for zones %v and no generic model in %s", signal, zones, root)
	}
	if err != nil {
		return nil, &forecast.Error{Code: forecast.ErrorCode(err), Field: "models", Message: "cannot load the models of " + root, Err: err}
	}
	out := make(map[forecast.Zone]Model, len(zones))
	for _, z := range zones {
		m, ok := zm[z]
		if !ok {
			if generic == nil {
				return nil, forecast.FieldErrorf(forecast.ENOTFOUND, "models", "no %s model for zone %s and no generic model in %s", signal, z, root)
			}
			m = generic
		}
		out[z] = InProcessModel(m, LocalVersion)
	}
	return out, nil
}

// RegistrySource resolves models:/ URIs through a model registry and loads
// the versions in process.
type RegistrySource struct {
	Store registry.Store
	// ArtifactsDestination maps mlflow-artifacts:/ locations (the MLflow
	// server's --artifacts-destination).
	ArtifactsDestination string
	// Fetch gives the other locations versions may be fetched from and
	// the size limits (fetch.Fetcher's Sources, MaxBytes, MaxFiles).
	Fetch fetch.Fetcher
	// S3 configures the client for s3:// locations.
	S3 s3.Config
	// CacheDir receives the fetched versions (a directory per version).
	CacheDir string
	// Timeout bounds each registry call and each fetch (default 1 min).
	Timeout time.Duration
}

// Models resolves template (a models:/ URI, ZonePlaceholder allowed) for
// each zone, fetches the version and loads it; the rows' version is the
// registry's version number. Errors name the field "model": EINVALID for a
// bad URI or a model of another zone or signal, ENOTFOUND for a model,
// version or alias that does not exist.
func (rs RegistrySource) Models(ctx context.Context, template string, signal forecast.Signal, zones []forecast.Zone) (map[forecast.Zone]Model, error) {
	timeout := cmp.Or(rs.Timeout, time.Minute)
	fe := rs.Fetch
	fe.ArtifactsDestination = rs.ArtifactsDestination
	out := make(map[forecast.Zone]Model, len(zones))
	type load struct {
		m  models.Model
		bm Model
	}
	loaded := map[string]load{} // by expanded URI: a template without {zone} is fetched once
	for _, z := range zones {
		uri := Expand(template, z)
		if l, ok := loaded[uri]; ok {
			if err := fits(l.m, z, signal); err != nil {
				return nil, err
			}
			out[z] = l.bm
			continue
		}
		ref, err := registry.ParseModelURI(uri)
		if err != nil {
			return nil, modelErr(err, "%s", forecast.ErrorMessage(err))
		}
		rctx, cancel := context.WithTimeout(ctx, timeout)
		v, err := registry.Resolve(rctx, rs.Store, ref)
		cancel()
		if err != nil {
			return nil, modelErr(err, "%s: %s", uri, forecast.ErrorMessage(err))
		}
		loc, err := fe.Resolve(v.ArtifactLocation())
		if err != nil {
			return nil, modelErr(err, "%s version %d: %s", ref.Name, v.Version, forecast.ErrorMessage(err))
		}
		if s3.IsURI(loc) && fe.S3 == nil {
			if fe.S3, err = s3.NewClient(rs.S3); err != nil {
				return nil, err
			}
		}
		dir := filepath.Join(rs.CacheDir, url.PathEscape(ref.Name), "v"+strconv.FormatInt(v.Version, 10))
		fctx, cancel := context.WithTimeout(ctx, timeout)
		err = fe.Fetch(fctx, v.ArtifactLocation(), dir)
		cancel()
		if err != nil {
			return nil, modelErr(err, "fetch %s version %d from %s: %s", ref.Name, v.Version, v.ArtifactLocation(), forecast.ErrorMessage(err))
		}
		m, err := artifact.Load(dir)
		if err != nil {
			os.RemoveAll(dir) // keep no copy of a version that does not load
			return nil, modelErr(err, "%s version %d: %s", ref.Name, v.Version, forecast.ErrorMessage(err))
		}
		if err := fits(m, z, signal); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		bm := InProcessModel(m, strconv.FormatInt(v.Version, 10))
		bm.Name = ref.Name
		out[z], loaded[uri] = bm, load{m, bm}
	}
	return out, nil
}

// fits checks that m forecasts zone (or is generic) and signal.
func fits(m models.Model, zone forecast.Zone, signal forecast.Signal) error {
	meta := m.Meta()
	if meta.Signal != signal || (meta.Zone != "" && meta.Zone != zone) {
		return forecast.FieldErrorf(forecast.EINVALID, "model", "model %s forecasts zone %q signal %s, not zone %s signal %s", meta.Name, meta.Zone, meta.Signal, zone, signal)
	}
	return nil
}

// FromEndpoints opens the OIP model of each zone: endpoint and template
// (ZonePlaceholder allowed in both) give the server and the model name,
// the name of a models:/ URI or a plain name. Clients are shared between
// zones with the same endpoint; the caller closes them. Errors name the
// field "endpoint" (bad URL, server unreachable) or "model" (unknown to
// the server, outside the contract).
func FromEndpoints(ctx context.Context, endpoint, template string, zones []forecast.Zone, r Retry) (map[forecast.Zone]Model, []io.Closer, error) {
	clients := map[string]Model{}
	var closers []io.Closer
	out := make(map[forecast.Zone]Model, len(zones))
	fail := func(err error) (map[forecast.Zone]Model, []io.Closer, error) {
		for _, c := range closers {
			c.Close()
		}
		return nil, nil, err
	}
	byURL := map[string]oip.Client{}
	for _, z := range zones {
		u := Expand(endpoint, z)
		name, err := oipName(Expand(template, z))
		if err != nil {
			return fail(err)
		}
		key := u + "\x00" + name
		if m, ok := clients[key]; ok {
			out[z] = m
			continue
		}
		c, ok := byURL[u]
		if !ok {
			cl, err := DialEndpoint(u, cmp.Or(r.Timeout, 30*time.Second))
			if err != nil {
				return fail(err)
			}
			c = cl
			byURL[u] = c
			closers = append(closers, cl)
		}
		m, err := OIPModel(ctx, c, name, r)
		if err != nil {
			field := "model"
			if forecast.ErrorCode(err) == forecast.EUNAVAILABLE || isDeadline(err) {
				field = "endpoint"
			}
			return fail(&forecast.Error{Code: forecast.ErrorCode(err), Field: field, Message: "model " + name + " at " + u + ": " + forecast.ErrorMessage(err), Err: err})
		}
		clients[key] = m
		out[z] = m
	}
	return out, closers, nil
}

// oipName is the OIP model name of a --model value: a models:/ URI's
// registered name, or the value itself.
func oipName(s string) (string, error) {
	if !strings.HasPrefix(s, "models:") {
		if s == "" {
			return "", forecast.FieldErrorf(forecast.EINVALID, "model", "no model name")
		}
		return s, nil
	}
	ref, err := registry.ParseModelURI(s)
	if err != nil {
		return "", modelErr(err, "%s", forecast.ErrorMessage(err))
	}
	return ref.Name, nil
}

func modelErr(cause error, format string, args ...any) error {
	e := forecast.FieldErrorf(forecast.ErrorCode(cause), "model", format, args...)
	e.Err = cause
	return e
}
