package mlflowclient

import (
	"context"
	"net/http"
	"net/url"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/mlflowjson"
)

// CreateModel implements registry.Store (POST registered-models/create).
func (c *Client) CreateModel(ctx context.Context, name, description string, tags []registry.Tag) (registry.RegisteredModel, error) {
	if err := registry.ValidateName("name", name); err != nil {
		return registry.RegisteredModel{}, err
	}
	if err := registry.ValidateDescription(description); err != nil {
		return registry.RegisteredModel{}, err
	}
	if err := validateTags(tags); err != nil {
		return registry.RegisteredModel{}, err
	}
	in := struct {
		Name        string           `json:"name"`
		Description string           `json:"description,omitempty"`
		Tags        []mlflowjson.Tag `json:"tags,omitempty"`
	}{name, description, mlflowjson.FromTags(tags)}
	var out mlflowjson.ModelResponse
	if err := c.send(ctx, http.MethodPost, "registered-models/create", in, &out); err != nil {
		return registry.RegisteredModel{}, err
	}
	return out.Decode()
}

// GetModel implements registry.Store (GET registered-models/get).
func (c *Client) GetModel(ctx context.Context, name string) (registry.RegisteredModel, error) {
	if err := checkName(name); err != nil {
		return registry.RegisteredModel{}, err
	}
	var out mlflowjson.ModelResponse
	if err := c.get(ctx, "registered-models/get", url.Values{"name": {name}}, &out); err != nil {
		return registry.RegisteredModel{}, err
	}
	return out.Decode()
}

// RenameModel implements registry.Store (POST registered-models/rename).
func (c *Client) RenameModel(ctx context.Context, name, newName string) (registry.RegisteredModel, error) {
	if err := checkName(name); err != nil {
		return registry.RegisteredModel{}, err
	}
	if err := registry.ValidateName("new_name", newName); err != nil {
		return registry.RegisteredModel{}, err
	}
	in := struct {
		Name    string `json:"name"`
		NewName string `json:"new_name"`
	}{name, newName}
	var out mlflowjson.ModelResponse
	if err := c.send(ctx, http.MethodPost, "registered-models/rename", in, &out); err != nil {
		return registry.RegisteredModel{}, err
	}
	return out.Decode()
}

// UpdateModel implements registry.Store (PATCH registered-models/update).
func (c *Client) UpdateModel(ctx context.Context, name, description string) (registry.RegisteredModel, error) {
	if err := checkName(name); err != nil {
		return registry.RegisteredModel{}, err
	}
	if err := registry.ValidateDescription(description); err != nil {
		return registry.RegisteredModel{}, err
	}
	in := struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	}{name, description}
	var out mlflowjson.ModelResponse
	if err := c.send(ctx, http.MethodPatch, "registered-models/update", in, &out); err != nil {
		return registry.RegisteredModel{}, err
	}
	return out.Decode()
}

// DeleteModel implements registry.Store (DELETE registered-models/delete).
func (c *Client) DeleteModel(ctx context.Context, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	in := struct {
		Name string `json:"name"`
	}{name}
	return c.send(ctx, http.MethodDelete, "registered-models/delete", in, nil)
}

// SetModelTag implements registry.Store (POST registered-models/set-tag).
func (c *Client) SetModelTag(ctx context.Context, name string, tag registry.Tag) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := registry.ValidateTag(tag); err != nil {
		return err
	}
	in := struct {
		Name  string `json:"name"`
		Key   string `json:"key"`
		Value string `json:"value"`
	}{name, tag.Key, tag.Value}
	return c.send(ctx, http.MethodPost, "registered-models/set-tag", in, nil)
}

// DeleteModelTag implements registry.Store (DELETE
// registered-models/delete-tag).
func (c *Client) DeleteModelTag(ctx context.Context, name, key string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if key == "" {
		return forecast.FieldErrorf(forecast.EINVALID, "key", "missing value for parameter 'key'")
	}
	in := struct {
		Name string `json:"name"`
		Key  string `json:"key"`
	}{name, key}
	return c.send(ctx, http.MethodDelete, "registered-models/delete-tag", in, nil)
}

// SetAlias implements registry.Store (POST registered-models/alias).
func (c *Client) SetAlias(ctx context.Context, name, alias string, v int64) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := registry.ValidateAlias(alias); err != nil {
		return err
	}
	if err := checkVersion(v); err != nil {
		return err
	}
	in := struct {
		Name    string `json:"name"`
		Alias   string `json:"alias"`
		Version string `json:"version"`
	}{name, alias, mlflowjson.FormatVersion(v)}
	return c.send(ctx, http.MethodPost, "registered-models/alias", in, nil)
}

// DeleteAlias implements registry.Store (DELETE registered-models/alias).
// MLflow answers success for an alias that does not exist (of a model that
// does), and so does DeleteAlias.
func (c *Client) DeleteAlias(ctx context.Context, name, alias string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if alias == "" {
		return forecast.FieldErrorf(forecast.EINVALID, "alias", "missing value for parameter 'alias'")
	}
	in := struct {
		Name  string `json:"name"`
		Alias string `json:"alias"`
	}{name, alias}
	return c.send(ctx, http.MethodDelete, "registered-models/alias", in, nil)
}

// VersionByAlias implements registry.Store (GET registered-models/alias).
// MLflow answers INVALID_PARAMETER_VALUE for an alias that does not exist;
// the client returns ENOTFOUND, as the contract says.
func (c *Client) VersionByAlias(ctx context.Context, name, alias string) (registry.ModelVersion, error) {
	if err := checkName(name); err != nil {
		return registry.ModelVersion{}, err
	}
	if alias == "" {
		return registry.ModelVersion{}, forecast.FieldErrorf(forecast.EINVALID, "alias", "missing value for parameter 'alias'")
	}
	var out mlflowjson.VersionResponse
	err := c.get(ctx, "registered-models/alias", url.Values{"name": {name}, "alias": {alias}}, &out)
	if forecast.ErrorCode(err) == forecast.EINVALID {
		// A valid name and alias: the only thing left to be invalid is the
		// alias's existence.
		return registry.ModelVersion{}, &forecast.Error{Code: forecast.ENOTFOUND, Message: forecast.ErrorMessage(err), Err: err}
	}
	if err != nil {
		return registry.ModelVersion{}, err
	}
	return out.Decode()
}

// checkName refuses an empty name before a call (MLflow would answer
// INVALID_PARAMETER_VALUE without naming the field).
func checkName(name string) error {
	if name == "" {
		return forecast.FieldErrorf(forecast.EINVALID, "name", "missing value for parameter 'name'")
	}
	return nil
}

func checkVersion(v int64) error {
	if v < 1 {
		return forecast.FieldErrorf(forecast.EINVALID, "version", "version %d is not a version number", v)
	}
	return nil
}

func validateTags(tags []registry.Tag) error {
	for _, t := range tags {
		if err := registry.ValidateTag(t); err != nil {
			return err
		}
	}
	return nil
}
