// Package rest is the Open Inference Protocol's REST transport: a Client
// implementing oip.Client and a Handler serving an oip.Backend, both
// speaking JSON and the binary tensor data extension
// (Inference-Header-Content-Length, binary_data_size, binary_data,
// binary_data_output).
//
// JSON tensor data is decoded flat or nested (row-major, the nesting must
// then follow the shape) and always encoded flat. Non-finite floats cannot
// travel as JSON: ask for binary outputs to carry them.
//
// Error mapping, client side: health is judged by status code only; 400
// EINVALID (a 400 whose text says "not ready", MLServer's answer, is
// EUNAVAILABLE), 404 ENOTFOUND, 501 EINVALID (KServe has no /versions/
// routes), 429/502/503/504, connection failures and timeouts EUNAVAILABLE
// with the cause (context errors included) kept in the chain. Server side:
// EINVALID 400, ENOTFOUND 404, EUNAVAILABLE 503, others 500 with a generic
// message.
package rest
