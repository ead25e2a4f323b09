package oip

import "context"

// Client is what a caller needs from an OIP endpoint, REST or gRPC. Each
// call honours ctx's deadline. Health is judged by status only: a call
// returns nil when the server says live/ready and an EUNAVAILABLE error
// otherwise. version "" means the server's default version.
type Client interface {
	ServerLive(ctx context.Context) error
	ServerReady(ctx context.Context) error
	ModelReady(ctx context.Context, model, version string) error
	ServerMetadata(ctx context.Context) (ServerMetadata, error)
	ModelMetadata(ctx context.Context, model, version string) (ModelMetadata, error)
	Infer(ctx context.Context, model, version string, req *InferenceRequest) (*InferenceResponse, error)
	Close() error
}

// Backend is what a model server implements; oip/rest and oip/grpc serve it.
// Readiness methods return (false, nil) for "not ready" and ENOTFOUND for an
// unknown model. Infer returns EINVALID for a request that does not fit the
// model, ENOTFOUND for an unknown model and EUNAVAILABLE when the model is
// not ready.
type Backend interface {
	ServerMetadata(ctx context.Context) (ServerMetadata, error)
	ServerLive(ctx context.Context) (bool, error)
	ServerReady(ctx context.Context) (bool, error)
	ModelReady(ctx context.Context, model, version string) (bool, error)
	ModelMetadata(ctx context.Context, model, version string) (ModelMetadata, error)
	Infer(ctx context.Context, model, version string, req *InferenceRequest) (*InferenceResponse, error)
}
