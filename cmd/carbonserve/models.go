package main

// Loading models: from directories, S3 prefixes or the registry.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/carbongate/carbongate/models/serve"
	"github.com/carbongate/carbongate/registry/s3"
)

// remote is an S3 prefix mirrored into a local directory.
type remote struct {
	uri, dir    string
	fingerprint string
}

// resolveSources applies the /mnt/models default and checks the flags
// agree.
func (m *Main) resolveSources() error {
	if m.Registry.Model != "" {
		if err := m.checkRegistry(); err != nil {
			return err
		}
	} else if m.ModelDir == "" && m.ModelsDir == "" {
		if st, err := m.Stat(KServeModelDir); err == nil && st.IsDir() {
			m.ModelDir = KServeModelDir
		} else {
			return errors.New("no models: give --model_dir, --models or --model (or mount " + KServeModelDir + ")")
		}
	}
	if m.ModelName != "" && m.ModelDir == "" && m.reg == nil {
		return errors.New("--model_name names the model of --model_dir")
	}
	if m.MaxBatch < 1 {
		return fmt.Errorf("--max-batch %d must be at least 1", m.MaxBatch)
	}
	if m.MaxInFlight < 1 {
		return fmt.Errorf("--max-inflight %d must be at least 1", m.MaxInFlight)
	}
	if m.ReloadInterval < 0 {
		return fmt.Errorf("--reload-interval %v must not be negative", m.ReloadInterval)
	}
	return nil
}

func (m *Main) needsS3() bool { return s3.IsURI(m.ModelDir) || s3.IsURI(m.ModelsDir) }

// loadAndWatch fetches and loads the models, reports the outcome on
// Loaded (and Done when nothing could be served), then reloads every
// ReloadInterval until ctx ends.
func (m *Main) loadAndWatch(ctx context.Context) {
	err := m.load(ctx)
	m.loadErr = err
	if err == nil {
		m.startGRPC()
	}
	close(m.loaded)
	if err != nil {
		if ctx.Err() == nil {
			m.done <- fmt.Errorf("loading models: %w", err)
		}
		return
	}
	switch {
	case m.reg != nil:
		m.reg.Run(ctx)
	case m.ReloadInterval > 0:
		m.Backend.Watch(ctx, m.ReloadInterval, m.refetch)
	}
}

func (m *Main) load(ctx context.Context) error {
	if m.reg != nil {
		return m.loadRegistry(ctx)
	}
	var srcs []serve.Source
	for _, root := range []string{m.ModelDir, m.ModelsDir} {
		if root == "" {
			continue
		}
		dir := root
		if s3.IsURI(root) {
			var err error
			if dir, err = m.fetch(ctx, root); err != nil {
				return err
			}
		}
		found, err := serve.Discover(dir, m.Signal)
		if err != nil {
			return err
		}
		if root == m.ModelDir && m.ModelName != "" {
			if len(found) != 1 {
				return fmt.Errorf("--model_name %q needs one model in --model_dir, found %d", m.ModelName, len(found))
			}
			found[0].Name = m.ModelName
		}
		srcs = append(srcs, found...)
	}
	var errs []error
	for _, src := range srcs {
		name, err := m.Backend.Add(ctx, src)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", filepath.Base(src.Dir), err))
			m.Logger.Error("model not loaded", "model", name, "dir", filepath.Base(src.Dir), "error", err)
		}
	}
	if len(errs) == len(srcs) {
		return errors.Join(errs...)
	}
	return nil // the models that failed stay not ready; Reload retries them
}

// fetch mirrors uri into a directory of the cache and returns it.
func (m *Main) fetch(ctx context.Context, uri string) (string, error) {
	if m.CacheDir == "" {
		tmp, err := os.MkdirTemp("", "carbonserve-")
		if err != nil {
			return "", err
		}
		m.CacheDir, m.tmpCache = tmp, tmp
	}
	r := &remote{uri: uri, dir: filepath.Join(m.CacheDir, fmt.Sprintf("remote-%d", len(m.remotes)))}
	fctx, cancel := context.WithTimeout(ctx, m.FetchTimeout)
	defer cancel()
	t0 := time.Now()
	res, err := s3.Fetch(fctx, m.s3c, uri, r.dir)
	if err != nil {
		return "", fmt.Errorf("fetch %s: %w", uri, err)
	}
	r.fingerprint = res.Fingerprint
	m.remotes = append(m.remotes, r)
	m.Logger.Info("fetched models", "uri", uri, "objects", res.Objects, "bytes", res.Bytes, "elapsed_ms", time.Since(t0).Milliseconds())
	return r.dir, nil
}

// refetch downloads each S3 prefix again when its listing changed; Reload
// then swaps in the models whose MLmodel changed.
func (m *Main) refetch(ctx context.Context) error {
	var errs []error
	for _, r := range m.remotes {
		fctx, cancel := context.WithTimeout(ctx, m.FetchTimeout)
		fp, err := s3.Stat(fctx, m.s3c, r.uri)
		if err == nil && fp != r.fingerprint {
			var res s3.Result
			if res, err = s3.Fetch(fctx, m.s3c, r.uri, r.dir); err == nil {
				r.fingerprint = res.Fingerprint
				m.Logger.Info("fetched changed models", "uri", r.uri, "objects", res.Objects, "bytes", res.Bytes)
			}
		}
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r.uri, err))
		}
	}
	return errors.Join(errs...)
}
