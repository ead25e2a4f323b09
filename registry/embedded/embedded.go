// Package embedded is a registry.Store kept in one local JSON file, for
// running carbongate without a database (make run) and for tests. It
// follows the same contract as the PostgreSQL and CrateDB stores: MLflow's
// semantics, soft-deleted versions, version numbers never reused.
//
// Every write builds the next state from a copy of the current one and
// saves it whole (a temporary file in the same directory, fsync, rename,
// fsync of the directory) before the store switches to it, so a write that
// fails leaves both the file and the store as they were. A process holds
// an exclusive lock on path+".lock" while the store is open: a second
// process (or a second Open) gets EUNAVAILABLE instead of two writers
// overwriting each other. The file carries a format name and version;
// files of another format, another version or with unknown fields are
// refused. Reads run in parallel; writes are serialized, which also makes
// version allocation race-free.
//
// Errors are *forecast.Error values as registry.Store documents them, and
// EUNAVAILABLE when the file cannot be read, written or locked, or the
// store is closed.
package embedded

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
)

// Store is a registry.Store and registry.Notifier over one file. It is safe
// for concurrent use.
type Store struct {
	path string
	now  func() time.Time
	lock *os.File
	// save persists a state's bytes; saveFile unless a test injects a
	// failure.
	save func(path string, data []byte) error

	mu     sync.RWMutex
	st     *state // replaced, never modified, by writes
	closed bool
	// broken is set when a save failed after the rename: the file may hold
	// the new state while the store holds the old one, so every call fails
	// until the file is opened again.
	broken error

	watchers watchers
}

var (
	_ registry.Store    = (*Store)(nil)
	_ registry.Notifier = (*Store)(nil)
)

// Open opens the registry file at path, creating it (and its directory)
// when it does not exist, and locks it for this process. EINVALID for an
// empty path or a file this version does not understand; EUNAVAILABLE when
// another process holds the lock or the file cannot be read or written.
func Open(path string, o registry.Options) (*Store, error) {
	if path == "" {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "path", "embedded: the registry file path is required")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, unavailable("embedded: cannot create the registry directory", err)
	}
	lock, err := lockFile(path + ".lock")
	if err != nil {
		return nil, err
	}
	s := &Store{path: path, now: o.Now, lock: lock, save: saveFile}
	if s.st, err = s.load(); err != nil {
		_ = unlockFile(lock)
		return nil, err
	}
	removeTemps(path)
	return s, nil
}

// load reads the file, or creates it holding an empty registry.
func (s *Store) load() (*state, error) {
	data, err := os.ReadFile(s.path)
	if errors.Is(err, os.ErrNotExist) {
		st := newState()
		data, err := encode(st)
		if err == nil {
			err = s.save(s.path, data)
		}
		if err != nil {
			return nil, unavailable("embedded: cannot create "+s.path, err)
		}
		return st, nil
	}
	if err != nil {
		return nil, unavailable("embedded: cannot read "+s.path, err)
	}
	return decode(s.path, data)
}

// Close closes the watch channels and releases the lock. Calls after Close
// fail with EUNAVAILABLE; Close itself may be called more than once.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.watchers.closeAll()
	if err := unlockFile(s.lock); err != nil {
		return unavailable("embedded: cannot release the lock", err)
	}
	return nil
}

// usable reports why the store cannot serve calls, if it cannot. The
// caller holds mu.
func (s *Store) usable() error {
	switch {
	case s.closed:
		return forecast.Errorf(forecast.EUNAVAILABLE, "embedded: the store is closed")
	case s.broken != nil:
		return &forecast.Error{Code: forecast.EUNAVAILABLE, Message: "embedded: a save failed half-way; open the registry again", Err: s.broken}
	}
	return nil
}

// view runs fn on the current state under the read lock.
func (s *Store) view(ctx context.Context, fn func(st *state) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.usable(); err != nil {
		return err
	}
	return fn(s.st)
}

// update runs fn on a copy of the current state with the time of the
// write in ms, saves the copy and makes it current. When fn or the save
// fails, the store and its file keep the previous state.
func (s *Store) update(ctx context.Context, fn func(st *state, now int64) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	next := s.st.clone()
	if err := fn(next, s.now().UnixMilli()); err != nil {
		return err
	}
	data, err := encode(next)
	if err != nil {
		return &forecast.Error{Code: forecast.EINTERNAL, Message: "embedded: cannot encode the registry", Err: err}
	}
	if err := s.save(s.path, data); err != nil {
		if errors.As(err, new(*dirSyncError)) {
			s.broken = err
		}
		return unavailable("embedded: cannot save the registry", err)
	}
	changed := !slices.Equal(s.st.aliasTargets(), next.aliasTargets())
	s.st = next
	if changed {
		s.watchers.notify()
	}
	return nil
}

func unavailable(msg string, err error) *forecast.Error {
	return &forecast.Error{Code: forecast.EUNAVAILABLE, Message: msg, Err: err}
}

// result returns v, or the zero value when err is not nil, so that a
// failed write never returns the state it did not save.
func result[T any](v T, err error) (T, error) {
	if err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}
