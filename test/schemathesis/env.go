//go:build interop

// Package schemathesis runs Schemathesis, the property-based API tester,
// against a real carbongate process: it generates requests from the
// OpenAPI document the gateway serves (valid ones, and invalid ones that
// must be rejected) and checks every answer: no server errors, status
// codes, content types, headers and bodies as the document declares them.
// Run with `go test -tags interop ./test/schemathesis` (make test does).
package schemathesis

import "github.com/carbongate/carbongate/test/services"

// SchemathesisEnv holds schemathesis 4.32.5, fully pinned.
var SchemathesisEnv = services.Requirements{File: "requirements-schemathesis.txt", EnvVar: "CARBONGATE_VENV_SCHEMATHESIS"}
