// Package mlflowjson holds the JSON shapes of MLflow's
// model_registry.proto, shared by the server (registry/mlflowapi) and the
// client (registry/mlflowclient): snake_case, timestamps in Unix
// milliseconds, version numbers as strings, unset fields omitted, fields in
// proto order. It converts them to and from the registry's types.
package mlflowjson

import (
	"bytes"
	"strconv"

	"github.com/carbongate/carbongate/registry"
)

// Tag is MLflow's RegisteredModelTag and ModelVersionTag.
type Tag struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Alias is MLflow's RegisteredModelAlias.
type Alias struct {
	Alias   string `json:"alias"`
	Version string `json:"version"`
}

// Model is MLflow's RegisteredModel message.
type Model struct {
	Name                 string    `json:"name"`
	CreationTimestamp    Int64     `json:"creation_timestamp,omitempty"`
	LastUpdatedTimestamp Int64     `json:"last_updated_timestamp,omitempty"`
	Description          string    `json:"description,omitempty"`
	LatestVersions       []Version `json:"latest_versions,omitempty"`
	Tags                 []Tag     `json:"tags,omitempty"`
	Aliases              []Alias   `json:"aliases,omitempty"`
}

// Version is MLflow's ModelVersion message.
type Version struct {
	Name                 string   `json:"name"`
	Version              string   `json:"version"`
	CreationTimestamp    Int64    `json:"creation_timestamp,omitempty"`
	LastUpdatedTimestamp Int64    `json:"last_updated_timestamp,omitempty"`
	UserID               string   `json:"user_id,omitempty"`
	CurrentStage         string   `json:"current_stage,omitempty"`
	Description          string   `json:"description,omitempty"`
	Source               string   `json:"source,omitempty"`
	RunID                string   `json:"run_id,omitempty"`
	Status               string   `json:"status,omitempty"`
	StatusMessage        string   `json:"status_message,omitempty"`
	Tags                 []Tag    `json:"tags,omitempty"`
	RunLink              string   `json:"run_link,omitempty"`
	Aliases              []string `json:"aliases,omitempty"`
	StorageLocation      string   `json:"storage_location,omitempty"`
}

// Int64 is an int64 written as a number and read as a number or as a
// decimal string, as protobuf's JSON mapping may write it.
type Int64 int64

// UnmarshalJSON implements json.Unmarshaler.
func (n *Int64) UnmarshalJSON(b []byte) error {
	b = bytes.Trim(b, `"`)
	if string(b) == "null" || len(b) == 0 {
		*n = 0
		return nil
	}
	v, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return err
	}
	*n = Int64(v)
	return nil
}

// Response messages.
type (
	// ModelResponse is the answer of create, get, rename and update.
	ModelResponse struct {
		RegisteredModel *Model `json:"registered_model"`
	}
	// VersionResponse is the answer of the calls on one version.
	VersionResponse struct {
		ModelVersion *Version `json:"model_version"`
	}
	// VersionsResponse is the answer of get-latest-versions.
	VersionsResponse struct {
		ModelVersions []Version `json:"model_versions,omitempty"`
	}
	// ModelsPage is a page of registered-models/search.
	ModelsPage struct {
		RegisteredModels []Model `json:"registered_models,omitempty"`
		NextPageToken    string  `json:"next_page_token,omitempty"`
	}
	// VersionsPage is a page of model-versions/search.
	VersionsPage struct {
		ModelVersions []Version `json:"model_versions,omitempty"`
		NextPageToken string    `json:"next_page_token,omitempty"`
	}
	// DownloadURIResponse is the answer of get-download-uri.
	DownloadURIResponse struct {
		ArtifactURI string `json:"artifact_uri,omitempty"`
	}
)

// FormatVersion formats a version number as MLflow writes it.
func FormatVersion(v int64) string { return strconv.FormatInt(v, 10) }

// FromModel is m in MLflow's shape, with latest as its latest_versions.
func FromModel(m registry.RegisteredModel, latest []registry.ModelVersion) Model {
	out := Model{
		Name:                 m.Name,
		CreationTimestamp:    Int64(m.CreationTime),
		LastUpdatedTimestamp: Int64(m.LastUpdatedTime),
		Description:          m.Description,
		LatestVersions:       FromVersions(latest),
		Tags:                 FromTags(m.Tags),
	}
	for _, al := range m.Aliases {
		out.Aliases = append(out.Aliases, Alias{Alias: al.Alias, Version: FormatVersion(al.Version)})
	}
	return out
}

// FromVersion is v in MLflow's shape. The storage location is not sent:
// MLflow's server leaves it out of its answers.
func FromVersion(v registry.ModelVersion) Version {
	return Version{
		Name:                 v.Name,
		Version:              FormatVersion(v.Version),
		CreationTimestamp:    Int64(v.CreationTime),
		LastUpdatedTimestamp: Int64(v.LastUpdatedTime),
		UserID:               v.UserID,
		CurrentStage:         v.CurrentStage,
		Description:          v.Description,
		Source:               v.Source,
		RunID:                v.RunID,
		Status:               v.Status,
		StatusMessage:        v.StatusMessage,
		Tags:                 FromTags(v.Tags),
		RunLink:              v.RunLink,
		Aliases:              v.Aliases,
	}
}

// FromVersions is FromVersion of each; nil for none.
func FromVersions(vs []registry.ModelVersion) []Version {
	var out []Version
	for _, v := range vs {
		out = append(out, FromVersion(v))
	}
	return out
}

// FromTags is ts in MLflow's shape; nil for none.
func FromTags(ts []registry.Tag) []Tag {
	var out []Tag
	for _, t := range ts {
		out = append(out, Tag(t))
	}
	return out
}
