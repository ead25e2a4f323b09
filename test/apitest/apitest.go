// Package apitest serves carbongate's HTTP API for tests of its
// clients.
package apitest

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carbongate/carbongate/gateway/httpapi"
	"github.com/carbongate/carbongate/gateway/wiring"
)

// ServeBundled serves the HTTP API over the embedded gateway (bundled
// data, no trained models, a replay clock from 2021-06-01) on loopback
// until the test ends, and returns its base URL.
func ServeBundled(tb testing.TB) string {
	tb.Helper()
	reg := prometheus.NewRegistry()
	g, err := wiring.NewBundled(context.Background(), wiring.Config{Registerer: reg})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { g.Close() })
	srv, err := httpapi.New(httpapi.Config{Service: g.Service, Metrics: reg})
	if err != nil {
		tb.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	tb.Cleanup(ts.Close)
	return ts.URL
}
