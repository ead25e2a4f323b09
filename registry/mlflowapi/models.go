package mlflowapi

import (
	"context"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/mlflowjson"
)

// withLatest returns m as JSON with its latest version per stage, as
// MLflow's registered_model carries them.
func (a *API) withLatest(ctx context.Context, m registry.RegisteredModel) (mlflowjson.Model, error) {
	latest, err := a.cfg.Store.LatestVersions(ctx, m.Name, nil)
	if err != nil {
		return mlflowjson.Model{}, err
	}
	return mlflowjson.FromModel(m, latest), nil
}

func (a *API) modelResponse(ctx context.Context, m registry.RegisteredModel, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	j, err := a.withLatest(ctx, m)
	if err != nil {
		return nil, err
	}
	return mlflowjson.ModelResponse{RegisteredModel: &j}, nil
}

func (a *API) createModel(ctx context.Context, in *input) (any, error) {
	var req struct {
		Name            string           `json:"name"`
		Tags            []mlflowjson.Tag `json:"tags"`
		Description     string           `json:"description"`
		DeploymentJobID string           `json:"deployment_job_id"` // Databricks-only, ignored
	}
	if err := in.decode(&req); err != nil {
		return nil, err
	}
	if err := registry.ValidateName("name", req.Name); err != nil {
		return nil, err
	}
	ts, err := tags(req.Tags)
	if err != nil {
		return nil, err
	}
	m, err := a.cfg.Store.CreateModel(ctx, req.Name, req.Description, ts)
	if err != nil {
		return nil, err
	}
	return modelAnswer(mlflowjson.FromModel(m, nil)), nil
}

// nameRequest is the request of endpoints that take only a model name.
type nameRequest struct {
	Name string `json:"name"`
}

func (in *input) name() (string, error) {
	var req nameRequest
	if err := in.decode(&req); err != nil {
		return "", err
	}
	return req.Name, required("name", req.Name)
}

func (a *API) getModel(ctx context.Context, in *input) (any, error) {
	name, err := in.name()
	if err != nil {
		return nil, err
	}
	m, err := a.cfg.Store.GetModel(ctx, name)
	return a.modelResponse(ctx, m, err)
}

func (a *API) renameModel(ctx context.Context, in *input) (any, error) {
	var req struct {
		Name    string `json:"name"`
		NewName string `json:"new_name"`
	}
	if err := in.decode(&req); err != nil {
		return nil, err
	}
	if err := required("name", req.Name, "new_name", req.NewName); err != nil {
		return nil, err
	}
	if err := registry.ValidateName("new_name", req.NewName); err != nil {
		return nil, err
	}
	m, err := a.cfg.Store.RenameModel(ctx, req.Name, req.NewName)
	return a.modelResponse(ctx, m, err)
}

func (a *API) updateModel(ctx context.Context, in *input) (any, error) {
	var req struct {
		Name            string `json:"name"`
		Description     string `json:"description"`
		DeploymentJobID string `json:"deployment_job_id"` // Databricks-only, ignored
	}
	if err := in.decode(&req); err != nil {
		return nil, err
	}
	if err := required("name", req.Name); err != nil {
		return nil, err
	}
	m, err := a.cfg.Store.UpdateModel(ctx, req.Name, req.Description)
	return a.modelResponse(ctx, m, err)
}

func (a *API) deleteModel(ctx context.Context, in *input) (any, error) {
	name, err := in.name()
	if err != nil {
		return nil, err
	}
	return empty{}, a.cfg.Store.DeleteModel(ctx, name)
}

func (a *API) latestVersions(ctx context.Context, in *input) (any, error) {
	var req struct {
		Name   string   `json:"name"`
		Stages []string `json:"stages"`
	}
	if err := in.decode(&req); err != nil {
		return nil, err
	}
	if err := required("name", req.Name); err != nil {
		return nil, err
	}
	var stages []string
	for _, s := range req.Stages {
		st, err := registry.ValidateStage(s)
		if err != nil {
			return nil, err
		}
		stages = append(stages, st)
	}
	vs, err := a.cfg.Store.LatestVersions(ctx, req.Name, stages)
	if err != nil {
		return nil, err
	}
	return mlflowjson.VersionsResponse{ModelVersions: mlflowjson.FromVersions(vs)}, nil
}

func (a *API) setModelTag(ctx context.Context, in *input) (any, error) {
	var req struct {
		Name  string `json:"name"`
		Key   string `json:"key"`
		Value string `json:"value"`
	}
	if err := in.decode(&req); err != nil {
		return nil, err
	}
	if err := required("name", req.Name, "key", req.Key); err != nil {
		return nil, err
	}
	tag := registry.Tag{Key: req.Key, Value: req.Value}
	if err := registry.ValidateTag(tag); err != nil {
		return nil, err
	}
	return empty{}, a.cfg.Store.SetModelTag(ctx, req.Name, tag)
}

func (a *API) deleteModelTag(ctx context.Context, in *input) (any, error) {
	var req struct {
		Name string `json:"name"`
		Key  string `json:"key"`
	}
	if err := in.decode(&req); err != nil {
		return nil, err
	}
	if err := required("name", req.Name, "key", req.Key); err != nil {
		return nil, err
	}
	err := a.cfg.Store.DeleteModelTag(ctx, req.Name, req.Key)
	return empty{}, a.idempotent(ctx, err, req.Name, 0)
}

// idempotent makes a delete of something already absent succeed when its
// model (or version, when version > 0) exists, as MLflow's deletes of tags
// and aliases do; a missing model or version stays ENOTFOUND.
func (a *API) idempotent(ctx context.Context, err error, name string, version int64) error {
	if forecast.ErrorCode(err) != forecast.ENOTFOUND {
		return err
	}
	var perr error
	if version > 0 {
		_, perr = a.cfg.Store.GetVersion(ctx, name, version)
	} else {
		_, perr = a.cfg.Store.GetModel(ctx, name)
	}
	return perr
}

// aliasRequest is the request of the alias endpoints.
type aliasRequest struct {
	Name    string `json:"name"`
	Alias   string `json:"alias"`
	Version string `json:"version"` // set only
}

func (a *API) setAlias(ctx context.Context, in *input) (any, error) {
	var req aliasRequest
	if err := in.decode(&req); err != nil {
		return nil, err
	}
	if err := required("name", req.Name, "alias", req.Alias); err != nil {
		return nil, err
	}
	if err := registry.ValidateAlias(req.Alias); err != nil {
		return nil, err
	}
	v, err := version(req.Version)
	if err != nil {
		return nil, err
	}
	return empty{}, a.cfg.Store.SetAlias(ctx, req.Name, req.Alias, v)
}

func (a *API) aliasParams(in *input) (name, alias string, err error) {
	var req struct {
		Name  string `json:"name"`
		Alias string `json:"alias"`
	}
	if err := in.decode(&req); err != nil {
		return "", "", err
	}
	return req.Name, req.Alias, required("name", req.Name, "alias", req.Alias)
}

func (a *API) deleteAlias(ctx context.Context, in *input) (any, error) {
	name, alias, err := a.aliasParams(in)
	if err != nil {
		return nil, err
	}
	err = a.cfg.Store.DeleteAlias(ctx, name, alias)
	return empty{}, a.idempotent(ctx, err, name, 0)
}

// versionByAlias answers a missing alias (or model) with
// INVALID_PARAMETER_VALUE, as MLflow does.
func (a *API) versionByAlias(ctx context.Context, in *input) (any, error) {
	name, alias, err := a.aliasParams(in)
	if err != nil {
		return nil, err
	}
	v, err := a.cfg.Store.VersionByAlias(ctx, name, alias)
	if forecast.ErrorCode(err) == forecast.ENOTFOUND {
		return nil, &forecast.Error{Code: forecast.EINVALID, Field: "alias",
			Message: "Registered model alias " + alias + " not found.", Err: err}
	}
	if err != nil {
		return nil, err
	}
	return versionAnswer(v), nil
}
