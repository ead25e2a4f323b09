package lazy

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/embedded"
)

// TestConnectsLater: while the backend does not open every call is
// EUNAVAILABLE (with the open error as cause); once it opens, calls go
// through.
func TestConnectsLater(t *testing.T) {
	path := filepath.Join(t.TempDir(), "reg.db")
	var tries atomic.Int32
	down := errors.New("connection refused")
	l := New(func(ctx context.Context) (registry.Store, error) {
		if tries.Add(1) < 3 {
			return nil, down
		}
		return embedded.Open(path, registry.Options{})
	}, 10*time.Millisecond, nil)
	defer l.Close()
	_, err := l.GetModel(context.Background(), "m")
	if forecast.ErrorCode(err) != forecast.EUNAVAILABLE || !errors.Is(err, down) {
		t.Fatalf("before connecting: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !l.Connected() {
		if time.Now().After(deadline) {
			t.Fatal("not connected after 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := l.CreateModel(context.Background(), "m", "", nil); err != nil {
		t.Fatal(err)
	}
	if m, err := l.GetModel(context.Background(), "m"); err != nil || m.Name != "m" {
		t.Fatalf("%+v %v", m, err)
	}
}

// TestCloseWhileRetrying returns promptly and leaves no goroutine behind.
func TestCloseWhileRetrying(t *testing.T) {
	l := New(func(ctx context.Context) (registry.Store, error) { return nil, errors.New("down") }, time.Hour, nil)
	done := make(chan error, 1)
	go func() { done <- l.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close hung")
	}
}
