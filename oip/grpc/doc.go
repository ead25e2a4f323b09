// Package oipgrpc is the gRPC transport of the Open Inference Protocol
// (KServe v2 GRPCInferenceService, stubs in oip/grpc/inferencepb): Client
// implements oip.Client over HTTP/2, NewServer and Register serve an
// oip.Backend. Tests drive the server through the real client.
//
// Tensors travel as raw_input_contents/raw_output_contents (little-endian,
// BYTES length-prefixed) or as InferTensorContents. The client sends raw
// for fixed-width inputs unless WithContents is given, and decodes both
// forms of response. The server answers raw when the request was raw or
// set the parameter binary_data_output=true, contents otherwise. Sizes are
// checked strictly both ways: raw byte length against shape × element
// size, contents length against the shape's element count.
//
// Errors are mapped once, in the table of errors.go: the client returns
// *forecast.Error values (EINVALID, ENOTFOUND, EUNAVAILABLE with context
// errors kept in the chain, EUNAUTHORIZED, EINTERNAL) and the server
// renders Backend errors as status codes with their safe message only.
package oipgrpc
