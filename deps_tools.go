//go:build tools

// Package carbongate pins dependencies that packages being written use.
package carbongate

import (
	_ "github.com/minio/minio-go/v7"
	_ "google.golang.org/grpc"
	_ "google.golang.org/protobuf/proto"
)
