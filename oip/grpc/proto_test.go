package oipgrpc_test

import "google.golang.org/protobuf/proto"

func protoMarshal(m proto.Message) ([]byte, error) { return proto.Marshal(m) }

func protoUnmarshal(b []byte, m proto.Message) error { return proto.Unmarshal(b, m) }
