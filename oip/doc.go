// Package oip holds the Open Inference Protocol (KServe v2) as a library:
// wire-independent types for tensors, inference requests and responses and
// metadata; the Client interface the gateway calls and the Backend interface
// a model server implements; and the forecaster tensor contract of
// docs/ARCHITECTURE.md. The transports live in oip/rest (JSON and the binary
// tensor extension) and oip/grpc (GRPCInferenceService); both implement
// Client and serve a Backend, so tests drive each server through its real
// client.
//
// Errors are *forecast.Error values: ENOTFOUND for an unknown model,
// EINVALID for a bad request, EUNAVAILABLE for a server or model that is
// not ready, down or too slow; context errors are kept in the chain.
package oip
