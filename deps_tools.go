//go:build tools

// Package carbongate pins dependencies that the packages of this module use.
package carbongate

import (
	_ "github.com/labstack/echo/v4"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "go.yaml.in/yaml/v3"
	_ "gonum.org/v1/gonum/mat"
)
