package rest

import (
	"encoding/json"

	"github.com/carbongate/carbongate/forecast"
)

// Names of the binary tensor data extension.
const (
	// HeaderInferenceLength is the HTTP header giving the length of the JSON
	// part of a body that carries binary tensors after it.
	HeaderInferenceLength = "Inference-Header-Content-Length"
	// ParamBinarySize is the tensor parameter giving the byte size of a
	// tensor's binary data.
	ParamBinarySize = "binary_data_size"
	// ParamBinaryData is the requested-output parameter asking for one
	// output in binary.
	ParamBinaryData = "binary_data"
	// ParamBinaryOutput is the request parameter asking for all outputs in
	// binary.
	ParamBinaryOutput = "binary_data_output"
)

// maxNesting bounds the array nesting of JSON tensor data.
const maxNesting = 32

type wireTensor struct {
	Name       string          `json:"name"`
	Shape      []int64         `json:"shape"`
	Datatype   string          `json:"datatype"`
	Parameters json.RawMessage `json:"parameters,omitempty"`
	Data       json.RawMessage `json:"data,omitempty"`
}

type wireOutput struct {
	Name       string          `json:"name"`
	Parameters json.RawMessage `json:"parameters,omitempty"`
}

type wireRequest struct {
	ID         string          `json:"id,omitempty"`
	Parameters json.RawMessage `json:"parameters,omitempty"`
	Inputs     []wireTensor    `json:"inputs"`
	Outputs    []wireOutput    `json:"outputs,omitempty"`
}

type wireResponse struct {
	ModelName    string          `json:"model_name"`
	ModelVersion string          `json:"model_version,omitempty"`
	ID           string          `json:"id,omitempty"`
	Parameters   json.RawMessage `json:"parameters,omitempty"`
	Outputs      []wireTensor    `json:"outputs"`
}

type wireTensorMeta struct {
	Name     string  `json:"name"`
	Datatype string  `json:"datatype"`
	Shape    []int64 `json:"shape"`
}

type wireModelMeta struct {
	Name     string           `json:"name"`
	Versions []string         `json:"versions,omitempty"`
	Platform string           `json:"platform"`
	Inputs   []wireTensorMeta `json:"inputs"`
	Outputs  []wireTensorMeta `json:"outputs"`
}

type wireServerMeta struct {
	Name       string   `json:"name"`
	Version    string   `json:"version"`
	Extensions []string `json:"extensions"`
}

type wireError struct {
	Error string `json:"error"`
}

func invalidf(format string, args ...any) error {
	return forecast.Errorf(forecast.EINVALID, format, args...)
}
