package mlflowapi

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/labstack/echo/v5"

	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/mlflowjson"
)

// empty is the answer of the calls that return nothing.
type empty struct{}

func modelAnswer(m mlflowjson.Model) mlflowjson.ModelResponse {
	return mlflowjson.ModelResponse{RegisteredModel: &m}
}

func versionAnswer(v registry.ModelVersion) mlflowjson.VersionResponse {
	j := mlflowjson.FromVersion(v)
	return mlflowjson.VersionResponse{ModelVersion: &j}
}

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
