package mlflowclient

import (
	"cmp"
	"context"
	"net/http"
	"net/url"
	"slices"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/mlflowjson"
)

// CreateVersion implements registry.Store (POST model-versions/create).
// MLflow's request has no user_id or status: the server records its caller
// and READY. UserID is therefore not sent, and a Status other than READY is
// EINVALID (field "status").
func (c *Client) CreateVersion(ctx context.Context, nv registry.NewVersion) (registry.ModelVersion, error) {
	if nv.Status != "" && nv.Status != registry.StatusReady {
		return registry.ModelVersion{}, forecast.FieldErrorf(forecast.EINVALID, "status",
			"MLflow's REST API creates READY versions only, not %s", nv.Status)
	}
	nv, err := registry.ValidateNewVersion(nv)
	if err != nil {
		return registry.ModelVersion{}, err
	}
	in := struct {
		Name        string           `json:"name"`
		Source      string           `json:"source"`
		RunID       string           `json:"run_id,omitempty"`
		RunLink     string           `json:"run_link,omitempty"`
		Description string           `json:"description,omitempty"`
		Tags        []mlflowjson.Tag `json:"tags,omitempty"`
	}{nv.Name, nv.Source, nv.RunID, nv.RunLink, nv.Description, mlflowjson.FromTags(nv.Tags)}
	var out mlflowjson.VersionResponse
	if err := c.send(ctx, http.MethodPost, "model-versions/create", in, &out); err != nil {
		return registry.ModelVersion{}, err
	}
	return out.Decode()
}

// versionRef is the name and version of most model-versions requests.
type versionRef struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

func ref(name string, v int64) (versionRef, error) {
	if err := checkName(name); err != nil {
		return versionRef{}, err
	}
	if err := checkVersion(v); err != nil {
		return versionRef{}, err
	}
	return versionRef{Name: name, Version: mlflowjson.FormatVersion(v)}, nil
}

// GetVersion implements registry.Store (GET model-versions/get).
func (c *Client) GetVersion(ctx context.Context, name string, v int64) (registry.ModelVersion, error) {
	r, err := ref(name, v)
	if err != nil {
		return registry.ModelVersion{}, err
	}
	var out mlflowjson.VersionResponse
	if err := c.get(ctx, "model-versions/get", url.Values{"name": {r.Name}, "version": {r.Version}}, &out); err != nil {
		return registry.ModelVersion{}, err
	}
	return out.Decode()
}

// UpdateVersion implements registry.Store (PATCH model-versions/update).
func (c *Client) UpdateVersion(ctx context.Context, name string, v int64, description string) (registry.ModelVersion, error) {
	r, err := ref(name, v)
	if err != nil {
		return registry.ModelVersion{}, err
	}
	if err := registry.ValidateDescription(description); err != nil {
		return registry.ModelVersion{}, err
	}
	in := struct {
		versionRef
		Description string `json:"description"`
	}{r, description}
	var out mlflowjson.VersionResponse
	if err := c.send(ctx, http.MethodPatch, "model-versions/update", in, &out); err != nil {
		return registry.ModelVersion{}, err
	}
	return out.Decode()
}

// TransitionStage implements registry.Store (POST
// model-versions/transition-stage).
func (c *Client) TransitionStage(ctx context.Context, name string, v int64, stage string, archiveExisting bool) (registry.ModelVersion, error) {
	r, err := ref(name, v)
	if err != nil {
		return registry.ModelVersion{}, err
	}
	if stage, err = registry.ValidateStage(stage); err != nil {
		return registry.ModelVersion{}, err
	}
	if archiveExisting && stage != registry.StageStaging && stage != registry.StageProduction {
		// MLflow refuses this too, but as INTERNAL_ERROR (HTTP 500).
		return registry.ModelVersion{}, forecast.FieldErrorf(forecast.EINVALID, "archive_existing_versions",
			"archive_existing_versions needs stage Staging or Production, not %s", stage)
	}
	in := struct {
		versionRef
		Stage           string `json:"stage"`
		ArchiveExisting bool   `json:"archive_existing_versions"`
	}{r, stage, archiveExisting}
	var out mlflowjson.VersionResponse
	if err := c.send(ctx, http.MethodPost, "model-versions/transition-stage", in, &out); err != nil {
		return registry.ModelVersion{}, err
	}
	return out.Decode()
}

// DeleteVersion implements registry.Store (DELETE model-versions/delete).
func (c *Client) DeleteVersion(ctx context.Context, name string, v int64) error {
	r, err := ref(name, v)
	if err != nil {
		return err
	}
	return c.send(ctx, http.MethodDelete, "model-versions/delete", r, nil)
}

// LatestVersions implements registry.Store (POST
// registered-models/get-latest-versions, as MLflow's RestStore calls it).
// MLflow answers in no particular order; the client orders the versions by
// stage as the contract says.
func (c *Client) LatestVersions(ctx context.Context, name string, stages []string) ([]registry.ModelVersion, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	canon := make([]string, 0, len(stages))
	for _, s := range stages {
		st, err := registry.ValidateStage(s)
		if err != nil {
			return nil, err
		}
		canon = append(canon, st)
	}
	in := struct {
		Name   string   `json:"name"`
		Stages []string `json:"stages,omitempty"`
	}{name, canon}
	var out mlflowjson.VersionsResponse
	if err := c.send(ctx, http.MethodPost, "registered-models/get-latest-versions", in, &out); err != nil {
		return nil, err
	}
	vs, err := mlflowjson.Versions(out.ModelVersions)
	if err != nil {
		return nil, err
	}
	order := canon
	if len(order) == 0 {
		order = []string{registry.StageNone, registry.StageStaging, registry.StageProduction, registry.StageArchived}
	}
	rank := func(v registry.ModelVersion) int {
		if i := slices.Index(order, v.CurrentStage); i >= 0 {
			return i
		}
		return len(order)
	}
	slices.SortStableFunc(vs, func(a, b registry.ModelVersion) int { return cmp.Compare(rank(a), rank(b)) })
	return vs, nil
}

// SetVersionTag implements registry.Store (POST model-versions/set-tag).
func (c *Client) SetVersionTag(ctx context.Context, name string, v int64, tag registry.Tag) error {
	r, err := ref(name, v)
	if err != nil {
		return err
	}
	if err := registry.ValidateTag(tag); err != nil {
		return err
	}
	in := struct {
		versionRef
		Key   string `json:"key"`
		Value string `json:"value"`
	}{r, tag.Key, tag.Value}
	return c.send(ctx, http.MethodPost, "model-versions/set-tag", in, nil)
}

// DeleteVersionTag implements registry.Store (DELETE
// model-versions/delete-tag).
func (c *Client) DeleteVersionTag(ctx context.Context, name string, v int64, key string) error {
	r, err := ref(name, v)
	if err != nil {
		return err
	}
	if key == "" {
		return forecast.FieldErrorf(forecast.EINVALID, "key", "missing value for parameter 'key'")
	}
	in := struct {
		versionRef
		Key string `json:"key"`
	}{r, key}
	return c.send(ctx, http.MethodDelete, "model-versions/delete-tag", in, nil)
}
