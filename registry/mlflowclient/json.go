package mlflowclient

import (
	"bytes"
	"cmp"
	"slices"
	"strconv"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
)

// The JSON shapes of MLflow's model_registry.proto: snake_case, timestamps
// in Unix milliseconds, version numbers as strings, unset fields omitted.

type jsonTag struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

type jsonAlias struct {
	Alias   string `json:"alias"`
	Version string `json:"version"`
}

type jsonModel struct {
	Name                 string      `json:"name"`
	CreationTimestamp    int64s      `json:"creation_timestamp"`
	LastUpdatedTimestamp int64s      `json:"last_updated_timestamp"`
	Description          string      `json:"description"`
	Tags                 []jsonTag   `json:"tags"`
	Aliases              []jsonAlias `json:"aliases"`
}

type jsonVersion struct {
	Name                 string    `json:"name"`
	Version              string    `json:"version"`
	CreationTimestamp    int64s    `json:"creation_timestamp"`
	LastUpdatedTimestamp int64s    `json:"last_updated_timestamp"`
	UserID               string    `json:"user_id"`
	CurrentStage         string    `json:"current_stage"`
	Description          string    `json:"description"`
	Source               string    `json:"source"`
	RunID                string    `json:"run_id"`
	Status               string    `json:"status"`
	StatusMessage        string    `json:"status_message"`
	Tags                 []jsonTag `json:"tags"`
	RunLink              string    `json:"run_link"`
	Aliases              []string  `json:"aliases"`
	StorageLocation      string    `json:"storage_location"`
}

// int64s is an int64 that protobuf's JSON mapping may write as a number
// or as a decimal string.
type int64s int64

func (n *int64s) UnmarshalJSON(b []byte) error {
	b = bytes.Trim(b, `"`)
	if string(b) == "null" || len(b) == 0 {
		*n = 0
		return nil
	}
	v, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return err
	}
	*n = int64s(v)
	return nil
}

func tagsJSON(tags []registry.Tag) []jsonTag {
	out := make([]jsonTag, len(tags))
	for i, t := range tags {
		out[i] = jsonTag(t)
	}
	return out
}

func tagsOf(in []jsonTag) []registry.Tag {
	if len(in) == 0 {
		return nil
	}
	out := make([]registry.Tag, len(in))
	for i, t := range in {
		out[i] = registry.Tag(t)
	}
	slices.SortFunc(out, func(a, b registry.Tag) int { return cmp.Compare(a.Key, b.Key) })
	return out
}

// model converts MLflow's registered model; EUNAVAILABLE for an alias
// whose version is not a number.
func (m jsonModel) model() (registry.RegisteredModel, error) {
	out := registry.RegisteredModel{
		Name: m.Name, CreationTime: int64(m.CreationTimestamp), LastUpdatedTime: int64(m.LastUpdatedTimestamp),
		Description: m.Description, Tags: tagsOf(m.Tags),
	}
	for _, a := range m.Aliases {
		v, err := parseVersion(a.Version)
		if err != nil {
			return registry.RegisteredModel{}, err
		}
		out.Aliases = append(out.Aliases, registry.Alias{Alias: a.Alias, Version: v})
	}
	slices.SortFunc(out.Aliases, func(a, b registry.Alias) int { return cmp.Compare(a.Alias, b.Alias) })
	return out, nil
}

func (v jsonVersion) version() (registry.ModelVersion, error) {
	n, err := parseVersion(v.Version)
	if err != nil {
		return registry.ModelVersion{}, err
	}
	out := registry.ModelVersion{
		Name: v.Name, Version: n, CreationTime: int64(v.CreationTimestamp), LastUpdatedTime: int64(v.LastUpdatedTimestamp),
		Description: v.Description, UserID: v.UserID, CurrentStage: v.CurrentStage, Source: v.Source,
		RunID: v.RunID, RunLink: v.RunLink, Status: v.Status, StatusMessage: v.StatusMessage,
		StorageLocation: v.StorageLocation, Tags: tagsOf(v.Tags),
	}
	if len(v.Aliases) > 0 {
		out.Aliases = slices.Sorted(slices.Values(v.Aliases))
	}
	return out, nil
}

func versions(in []jsonVersion) ([]registry.ModelVersion, error) {
	out := make([]registry.ModelVersion, 0, len(in))
	for _, j := range in {
		v, err := j.version()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func models(in []jsonModel) ([]registry.RegisteredModel, error) {
	out := make([]registry.RegisteredModel, 0, len(in))
	for _, j := range in {
		m, err := j.model()
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// parseVersion parses a version number the server sent.
func parseVersion(s string) (int64, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 1 {
		return 0, forecast.Errorf(forecast.EUNAVAILABLE, "mlflow: the server sent the version number %q", s)
	}
	return v, nil
}

// version formats a version number as MLflow takes it.
func version(v int64) string { return strconv.FormatInt(v, 10) }

// modelResponse is the answer of create, get, rename and update.
type modelResponse struct {
	RegisteredModel *jsonModel `json:"registered_model"`
}

type versionResponse struct {
	ModelVersion *jsonVersion `json:"model_version"`
}

// decode returns the model of r; EUNAVAILABLE when the answer has
// none.
func (r modelResponse) decode() (registry.RegisteredModel, error) {
	if r.RegisteredModel == nil {
		return registry.RegisteredModel{}, forecast.Errorf(forecast.EUNAVAILABLE, "mlflow: the answer has no registered_model")
	}
	return r.RegisteredModel.model()
}

func (r versionResponse) decode() (registry.ModelVersion, error) {
	if r.ModelVersion == nil {
		return registry.ModelVersion{}, forecast.Errorf(forecast.EUNAVAILABLE, "mlflow: the answer has no model_version")
	}
	return r.ModelVersion.version()
}
