package mlflowapi

import (
	"context"
	"net/url"
	"strings"

	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/mlflowjson"
)

func (a *API) createVersion(ctx context.Context, in *input) (any, error) {
	var req struct {
		Name        string           `json:"name"`
		Source      string           `json:"source"`
		RunID       string           `json:"run_id"`
		Tags        []mlflowjson.Tag `json:"tags"`
		RunLink     string           `json:"run_link"`
		Description string           `json:"description"`
		ModelID     string           `json:"model_id"` // MLflow 3 logged models: accepted, not resolved
	}
	if err := in.decode(&req); err != nil {
		return nil, err
	}
	if err := required("name", req.Name, "source", req.Source); err != nil {
		return nil, err
	}
	if err := checkSource(req.Source); err != nil {
		return nil, err
	}
	ts, err := tags(req.Tags)
	if err != nil {
		return nil, err
	}
	v, err := a.cfg.Store.CreateVersion(ctx, registry.NewVersion{
		Name: req.Name, Source: req.Source, RunID: req.RunID, RunLink: req.RunLink,
		Description: req.Description, Tags: ts, Status: registry.StatusReady,
	})
	if err != nil {
		return nil, err
	}
	return versionAnswer(v), nil
}

// checkSource rejects sources with "." or ".." path segments (after
// repeatedly URL-decoding) or NUL characters, as MLflow's server does, so
// that a version cannot point a downloader outside its artifact root.
func checkSource(source string) error {
	s := source
	for range 10 {
		u, err := url.QueryUnescape(s)
		if err != nil || u == s {
			break
		}
		s = u
	}
	if strings.IndexByte(s, 0) >= 0 {
		return invalid("source", "Invalid model version source: '%s'. It must not contain NUL characters.", source)
	}
	for _, seg := range strings.Split(s, "/") {
		if seg == ".." || seg == "." {
			return invalid("source", "Invalid model version source: '%s'. An absolute path without relative path references must be provided.", source)
		}
	}
	return nil
}

// versionRequest is the request of endpoints that take a name and a
// version.
type versionRequest struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

func (in *input) nameVersion() (string, int64, error) {
	var req versionRequest
	if err := in.decode(&req); err != nil {
		return "", 0, err
	}
	if err := required("name", req.Name); err != nil {
		return "", 0, err
	}
	v, err := version(req.Version)
	return req.Name, v, err
}

func (a *API) getVersion(ctx context.Context, in *input) (any, error) {
	name, v, err := in.nameVersion()
	if err != nil {
		return nil, err
	}
	mv, err := a.cfg.Store.GetVersion(ctx, name, v)
	if err != nil {
		return nil, err
	}
	return versionAnswer(mv), nil
}

func (a *API) updateVersion(ctx context.Context, in *input) (any, error) {
	var req struct {
		Name        string `json:"name"`
		Version     string `json:"version"`
		Description string `json:"description"`
	}
	if err := in.decode(&req); err != nil {
		return nil, err
	}
	if err := required("name", req.Name); err != nil {
		return nil, err
	}
	v, err := version(req.Version)
	if err != nil {
		return nil, err
	}
	mv, err := a.cfg.Store.UpdateVersion(ctx, req.Name, v, req.Description)
	if err != nil {
		return nil, err
	}
	return versionAnswer(mv), nil
}

func (a *API) deleteVersion(ctx context.Context, in *input) (any, error) {
	name, v, err := in.nameVersion()
	if err != nil {
		return nil, err
	}
	return empty{}, a.cfg.Store.DeleteVersion(ctx, name, v)
}

func (a *API) transitionStage(ctx context.Context, in *input) (any, error) {
	var req struct {
		Name                    string `json:"name"`
		Version                 string `json:"version"`
		Stage                   string `json:"stage"`
		ArchiveExistingVersions bool   `json:"archive_existing_versions"`
	}
	if err := in.decode(&req); err != nil {
		return nil, err
	}
	if err := required("name", req.Name, "version", req.Version, "stage", req.Stage); err != nil {
		return nil, err
	}
	v, err := version(req.Version)
	if err != nil {
		return nil, err
	}
	stage, err := registry.ValidateStage(req.Stage)
	if err != nil {
		return nil, err
	}
	if req.ArchiveExistingVersions && stage != registry.StageStaging && stage != registry.StageProduction {
		return nil, invalid("archive_existing_versions", "Model version transition cannot archive existing model versions because '%s' is not an Active stage. Valid stages are Staging, Production", stage)
	}
	mv, err := a.cfg.Store.TransitionStage(ctx, req.Name, v, stage, req.ArchiveExistingVersions)
	if err != nil {
		return nil, err
	}
	return versionAnswer(mv), nil
}

func (a *API) downloadURI(ctx context.Context, in *input) (any, error) {
	name, v, err := in.nameVersion()
	if err != nil {
		return nil, err
	}
	mv, err := a.cfg.Store.GetVersion(ctx, name, v)
	if err != nil {
		return nil, err
	}
	return mlflowjson.DownloadURIResponse{ArtifactURI: a.cfg.ArtifactURI(mv)}, nil
}

func (a *API) setVersionTag(ctx context.Context, in *input) (any, error) {
	var req struct {
		Name    string `json:"name"`
		Version string `json:"version"`
		Key     string `json:"key"`
		Value   string `json:"value"`
	}
	if err := in.decode(&req); err != nil {
		return nil, err
	}
	if err := required("name", req.Name, "version", req.Version, "key", req.Key); err != nil {
		return nil, err
	}
	v, err := version(req.Version)
	if err != nil {
		return nil, err
	}
	tag := registry.Tag{Key: req.Key, Value: req.Value}
	if err := registry.ValidateTag(tag); err != nil {
		return nil, err
	}
	return empty{}, a.cfg.Store.SetVersionTag(ctx, req.Name, v, tag)
}

func (a *API) deleteVersionTag(ctx context.Context, in *input) (any, error) {
	var req struct {
		Name    string `json:"name"`
		Version string `json:"version"`
		Key     string `json:"key"`
	}
	if err := in.decode(&req); err != nil {
		return nil, err
	}
	if err := required("name", req.Name, "version", req.Version, "key", req.Key); err != nil {
		return nil, err
	}
	v, err := version(req.Version)
	if err != nil {
		return nil, err
	}
	err = a.cfg.Store.DeleteVersionTag(ctx, req.Name, v, req.Key)
	return empty{}, a.idempotent(ctx, err, req.Name, v)
}
