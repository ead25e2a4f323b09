package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/carbongate/carbongate/cmd/internal/cli"
	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models/serve/follow"
	"github.com/carbongate/carbongate/oip"
	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/fetch"
	"github.com/carbongate/carbongate/registry/mlflowclient"
	"github.com/carbongate/carbongate/registry/s3"
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
	store, owned := r.Store, false
	if store == nil {
		if r.URI == "" {
			return errors.New("--model needs --registry or $MLFLOW_TRACKING_URI")
		}
		c, err := mlflowclient.New(r.URI, mlflowclient.Options{Token: r.Token, Timeout: follow.DefaultCallTimeout})
		if err != nil {
			return fmt.Errorf("--registry: %s", forecast.ErrorMessage(err))
		}
		store, owned = c, true
	}
	fe := r.Fetch
	fe.ArtifactsDestination = r.ArtifactsDestination
	f, err := follow.New(follow.Config{Ref: ref, Store: store, CloseStore: owned, Name: m.ModelName,
		Fetch: fe, S3: m.s3Client, FetchTimeout: m.FetchTimeout, PollInterval: r.PollInterval, Logger: m.Logger})
	if err != nil {
		if owned {
			store.Close()
		}
		return err
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
	return m.reg.Backend(m.Backend)
}

// loadRegistry fetches the followed version into the cache directory
// and serves it.
func (m *Main) loadRegistry(ctx context.Context) error {
	if m.CacheDir == "" {
		tmp, err := os.MkdirTemp("", "carbonserve-")
		if err != nil {
			return err
		}
		m.CacheDir, m.tmpCache = tmp, tmp
	}
	return m.reg.Load(ctx, m.Backend, m.CacheDir)
}

// s3Client returns the S3 client, made on first use.
func (m *Main) s3Client() (*minio.Client, error) {
	if m.s3c == nil {
		c, err := s3.NewClient(m.S3)
		if err != nil {
			return nil, err
		}
		m.s3c = c
	}
	return m.s3c, nil
}
