// Package inferencepb holds the Go stubs of the Open Inference Protocol
// gRPC service (proto package inference, service GRPCInferenceService),
// generated from grpc_predict_v2.proto of github.com/kserve/kserve@v0.20.0
// by ../generate.sh (make generate). Do not edit the *.pb.go files: change
// the pinned versions in generate.sh and regenerate.
package inferencepb
