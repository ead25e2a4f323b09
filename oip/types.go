package oip

// Datatype is an OIP tensor datatype.
type Datatype string

// The datatypes of the protocol.
const (
	BOOL   Datatype = "BOOL"
	UINT8  Datatype = "UINT8"
	UINT16 Datatype = "UINT16"
	UINT32 Datatype = "UINT32"
	UINT64 Datatype = "UINT64"
	INT8   Datatype = "INT8"
	INT16  Datatype = "INT16"
	INT32  Datatype = "INT32"
	INT64  Datatype = "INT64"
	FP16   Datatype = "FP16"
	FP32   Datatype = "FP32"
	FP64   Datatype = "FP64"
	BYTES  Datatype = "BYTES"
)

// Parameters are the free-form parameters of requests, responses and
// tensors. Values are string, bool, int64 or float64.
type Parameters map[string]any

// Tensor is one named input or output. Exactly one of the typed slices
// matching Datatype holds the row-major data: FP32 for FP32, FP64 for FP64,
// INT64 for INT64, INT32 for INT8/INT16/INT32, UINT64 for UINT8..UINT64,
// BOOL for BOOL, BYTES for BYTES. FP16 is not supported.
type Tensor struct {
	Name       string
	Datatype   Datatype
	Shape      []int64
	Parameters Parameters

	FP32   []float32
	FP64   []float64
	INT64  []int64
	INT32  []int32
	UINT64 []uint64
	BOOL   []bool
	BYTES  [][]byte
}

// RequestedOutput names an output the client wants.
type RequestedOutput struct {
	Name       string
	Parameters Parameters
}

// InferenceRequest is an infer call. ID is echoed in the response.
type InferenceRequest struct {
	ID         string
	Parameters Parameters
	Inputs     []Tensor
	Outputs    []RequestedOutput
}

// InferenceResponse answers an InferenceRequest.
type InferenceResponse struct {
	ModelName    string
	ModelVersion string
	ID           string
	Parameters   Parameters
	Outputs      []Tensor
}

// TensorMetadata declares a tensor of a model: -1 in Shape is a variable
// dimension.
type TensorMetadata struct {
	Name     string
	Datatype Datatype
	Shape    []int64
}

// ModelMetadata describes a model.
type ModelMetadata struct {
	Name     string
	Versions []string
	Platform string
	Inputs   []TensorMetadata
	Outputs  []TensorMetadata
}

// ServerMetadata describes a server.
type ServerMetadata struct {
	Name       string
	Version    string
	Extensions []string
}
