package mlflowapi

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/labstack/echo/v5"

	"github.com/carbongate/carbongate/registry"
)

// modelJSON is MLflow's RegisteredModel message in JSON, fields in proto
// order, unset fields omitted.
type modelJSON struct {
	Name                 string        `json:"name"`
	CreationTimestamp    int64         `json:"creation_timestamp,omitempty"`
	LastUpdatedTimestamp int64         `json:"last_updated_timestamp,omitempty"`
	Description          string        `json:"description,omitempty"`
	LatestVersions       []versionJSON `json:"latest_versions,omitempty"`
	Tags                 []tagJSON     `json:"tags,omitempty"`
	Aliases              []aliasJSON   `json:"aliases,omitempty"`
}

// versionJSON is MLflow's ModelVersion message in JSON; the version
// number is a string, as in MLflow.
type versionJSON struct {
	Name                 string    `json:"name"`
	Version              string    `json:"version"`
	CreationTimestamp    int64     `json:"creation_timestamp,omitempty"`
	LastUpdatedTimestamp int64     `json:"last_updated_timestamp,omitempty"`
	UserID               string    `json:"user_id,omitempty"`
	CurrentStage         string    `json:"current_stage,omitempty"`
	Description          string    `json:"description,omitempty"`
	Source               string    `json:"source,omitempty"`
	RunID                string    `json:"run_id,omitempty"`
	Status               string    `json:"status,omitempty"`
	StatusMessage        string    `json:"status_message,omitempty"`
	Tags                 []tagJSON `json:"tags,omitempty"`
	RunLink              string    `json:"run_link,omitempty"`
	Aliases              []string  `json:"aliases,omitempty"`
}

// aliasJSON is MLflow's RegisteredModelAlias message.
type aliasJSON struct {
	Alias   string `json:"alias"`
	Version string `json:"version"`
}

func toModelJSON(m registry.RegisteredModel, latest []registry.ModelVersion) modelJSON {
	out := modelJSON{
		Name:                 m.Name,
		CreationTimestamp:    m.CreationTime,
		LastUpdatedTimestamp: m.LastUpdatedTime,
		Description:          m.Description,
		Tags:                 toTagsJSON(m.Tags),
	}
	for _, v := range latest {
		out.LatestVersions = append(out.LatestVersions, toVersionJSON(v))
	}
	for _, al := range m.Aliases {
		out.Aliases = append(out.Aliases, aliasJSON{Alias: al.Alias, Version: strconv.FormatInt(al.Version, 10)})
	}
	return out
}

func toVersionJSON(v registry.ModelVersion) versionJSON {
	return versionJSON{
		Name:                 v.Name,
		Version:              strconv.FormatInt(v.Version, 10),
		CreationTimestamp:    v.CreationTime,
		LastUpdatedTimestamp: v.LastUpdatedTime,
		UserID:               v.UserID,
		CurrentStage:         v.CurrentStage,
		Description:          v.Description,
		Source:               v.Source,
		RunID:                v.RunID,
		Status:               v.Status,
		StatusMessage:        v.StatusMessage,
		Tags:                 toTagsJSON(v.Tags),
		RunLink:              v.RunLink,
		Aliases:              v.Aliases,
	}
}

func toVersionsJSON(vs []registry.ModelVersion) []versionJSON {
	var out []versionJSON
	for _, v := range vs {
		out = append(out, toVersionJSON(v))
	}
	return out
}

func toTagsJSON(ts []registry.Tag) []tagJSON {
	var out []tagJSON
	for _, t := range ts {
		out = append(out, tagJSON{Key: t.Key, Value: t.Value})
	}
	return out
}

// Response messages.
type (
	modelResponse struct {
		RegisteredModel modelJSON `json:"registered_model"`
	}
	versionResponse struct {
		ModelVersion versionJSON `json:"model_version"`
	}
	versionsResponse struct {
		ModelVersions []versionJSON `json:"model_versions,omitempty"`
	}
	modelsPage struct {
		RegisteredModels []modelJSON `json:"registered_models,omitempty"`
		NextPageToken    string      `json:"next_page_token,omitempty"`
	}
	versionsPage struct {
		ModelVersions []versionJSON `json:"model_versions,omitempty"`
		NextPageToken string        `json:"next_page_token,omitempty"`
	}
	downloadURIResponse struct {
		ArtifactURI string `json:"artifact_uri,omitempty"`
	}
	empty struct{}
)

// writeJSON encodes v whole before writing, so that an encoding error is
// reported rather than sent half-written.
func writeJSON(c *echo.Context, status int, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	h.Set(echo.HeaderContentLength, strconv.Itoa(buf.Len()))
	c.Response().WriteHeader(status)
	_, err := c.Response().Write(buf.Bytes())
	return err
}
