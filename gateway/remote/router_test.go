package remote_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/remote"
	"github.com/carbongate/carbongate/gateway/remote/remotetest"
	"github.com/carbongate/carbongate/gateway/route"
	"github.com/carbongate/carbongate/oip"
)

// source is a route.Source a test changes.
type source struct {
	mu  sync.Mutex
	eps []route.Endpoint
	err error
}

func (s *source) set(err error, eps ...route.Endpoint) {
	s.mu.Lock()
	s.eps, s.err = eps, err
	s.mu.Unlock()
}

func (s *source) Endpoints(ctx context.Context) ([]route.Endpoint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.eps, s.err
}

// dialer counts open clients.
type dialer struct {
	mu   sync.Mutex
	open int
}

type counted struct {
	oip.Client
	d *dialer
}

func (c counted) Close() error {
	c.d.mu.Lock()
	c.d.open--
	c.d.mu.Unlock()
	return c.Client.Close()
}

func (d *dialer) dial(e route.Endpoint) (oip.Client, error) {
	c, err := remote.Dial(e)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.open++
	d.mu.Unlock()
	return counted{c, d}, nil
}

func (d *dialer) count() int { d.mu.Lock(); defer d.mu.Unlock(); return d.open }

func req(z forecast.Zone) forecast.Request {
	return forecast.Request{Zone: z, Signal: forecast.SignalLifecycle, Start: start, Horizon: 24}
}

func TestRefreshSwaps(t *testing.T) {
	t.Parallel()
	oldB := remotetest.NewBackend("de-v1", 24, 24, 1)
	newB := remotetest.NewBackend("de-v2", 24, 24, 2)
	genB := remotetest.NewBackend("generic", 24, 24, 3)
	oldS := remotetest.ServeREST(t, oldB, "DE")
	newS := remotetest.ServeGRPC(t, newB, "DE")
	genS := remotetest.ServeREST(t, genB, "")
	src := &source{}
	src.set(nil, oldS.Endpoint, genS.Endpoint)
	d := &dialer{}
	r, err := remote.NewRouter(remote.RouterConfig{Source: src, Dial: d.dial, History: flatHistory{}, Timeout: 2 * time.Second, Refresh: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	if err := r.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if r.Zone("PL", forecast.SignalLifecycle) != nil || r.Zone("DE", forecast.SignalDirect) != nil || r.Generic(forecast.SignalLifecycle) == nil {
		t.Fatal("routes: want DE and generic, lifecycle only")
	}
	oldF := r.Zone("DE", forecast.SignalLifecycle)
	fc, err := oldF.Forecast(ctx, req("DE"))
	if err != nil || fc.Provenance.Model != "de-v1" {
		t.Fatalf("fc=%+v err=%v", fc.Provenance, err)
	}
	genF := r.Generic(forecast.SignalLifecycle)

	// A slow call is in flight on the old endpoint when the route changes.
	oldB.SetDelay(200 * time.Millisecond)
	inflight := make(chan error, 1)
	go func() {
		fc, err := oldF.Forecast(ctx, req("DE"))
		if err == nil && fc.Provenance.Model != "de-v1" {
			err = forecast.Errorf(forecast.EINTERNAL, "model %s", fc.Provenance.Model)
		}
		inflight <- err
	}()
	for oldB.Infers() < 2 {
		time.Sleep(time.Millisecond)
	}
	src.set(nil, newS.Endpoint, genS.Endpoint)
	r.Start() // the loop picks the change up
	deadline := time.Now().Add(2 * time.Second)
	for r.Zone("DE", forecast.SignalLifecycle) == oldF {
		if time.Now().After(deadline) {
			t.Fatal("route refresh did not swap the DE endpoint")
		}
		time.Sleep(5 * time.Millisecond)
	}
	fc, err = r.Zone("DE", forecast.SignalLifecycle).Forecast(ctx, req("DE"))
	if err != nil || fc.Provenance.Model != "de-v2" {
		t.Fatalf("after the swap: fc=%+v err=%v", fc.Provenance, err)
	}
	if err := <-inflight; err != nil {
		t.Fatalf("the call in flight during the swap failed: %v", err)
	}
	if r.Generic(forecast.SignalLifecycle) != genF {
		t.Fatal("the unchanged generic endpoint got a new forecaster")
	}
	for d.count() != 2 { // the old client is closed once its call ended
		if time.Now().After(deadline) {
			t.Fatalf("open clients=%d, want 2", d.count())
		}
		time.Sleep(5 * time.Millisecond)
	}

	// A failing source keeps the routes; duplicates are skipped and said.
	src.set(forecast.Errorf(forecast.EUNAVAILABLE, "api server down"))
	if err := r.Refresh(ctx); err == nil || r.Zone("DE", forecast.SignalLifecycle) == nil {
		t.Fatalf("err=%v, want an error and the routes kept", err)
	}
	dup := oldS.Endpoint
	src.set(nil, newS.Endpoint, dup)
	if err := r.Refresh(ctx); err == nil || !strings.Contains(err.Error(), "already routed") {
		t.Fatalf("err=%v, want the duplicate reported", err)
	}
	if got := r.Endpoints(); len(got) != 1 || got[0] != newS.Endpoint {
		t.Fatalf("endpoints=%v, want only the new DE endpoint", got)
	}
	r.Close()
	if d.count() != 0 {
		t.Fatalf("open clients=%d after Close, want 0", d.count())
	}
	if r.Zone("DE", forecast.SignalLifecycle) != nil {
		t.Fatal("routes after Close")
	}
}
