package mlflowjson

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
)

// The decoding side, used by a client: what a server sent, converted to
// the registry's types. A malformed answer is EUNAVAILABLE (the server
// failed), never EINVALID (the caller's fault).

// Registry converts m; EUNAVAILABLE for an alias whose version is not a
// number. Tags and aliases come sorted.
func (m Model) Registry() (registry.RegisteredModel, error) {
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

// Registry converts v; EUNAVAILABLE when its version is not a number.
func (v Version) Registry() (registry.ModelVersion, error) {
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

// Versions converts each of in.
func Versions(in []Version) ([]registry.ModelVersion, error) {
	out := make([]registry.ModelVersion, 0, len(in))
	for _, j := range in {
		v, err := j.Registry()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// Models converts each of in.
func Models(in []Model) ([]registry.RegisteredModel, error) {
	out := make([]registry.RegisteredModel, 0, len(in))
	for _, j := range in {
		m, err := j.Registry()
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// Decode returns the model of r; EUNAVAILABLE when the answer has none.
func (r ModelResponse) Decode() (registry.RegisteredModel, error) {
	if r.RegisteredModel == nil {
		return registry.RegisteredModel{}, forecast.Errorf(forecast.EUNAVAILABLE, "mlflow: the answer has no registered_model")
	}
	return r.RegisteredModel.Registry()
}

// Decode returns the version of r; EUNAVAILABLE when the answer has none.
func (r VersionResponse) Decode() (registry.ModelVersion, error) {
	if r.ModelVersion == nil {
		return registry.ModelVersion{}, forecast.Errorf(forecast.EUNAVAILABLE, "mlflow: the answer has no model_version")
	}
	return r.ModelVersion.Registry()
}

func tagsOf(in []Tag) []registry.Tag {
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

// parseVersion parses a version number the server sent.
func parseVersion(s string) (int64, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 1 {
		return 0, forecast.Errorf(forecast.EUNAVAILABLE, "mlflow: the server sent the version number %q", s)
	}
	return v, nil
}
