// Package embedded is a registry.Store kept in a local JSON file, for
// running carbongate without a database (make run) and for tests. It
// follows the same contract as the PostgreSQL and CrateDB stores: MLflow's
// semantics, soft-deleted versions, version numbers never reused.
//
// The registry is a snapshot (path) plus a journal of the writes since
// (path+".journal", see journal.go). A write changes copies of the models
// it touches, appends what it changed (fields, tags and aliases, see
// ops.go) to the journal and syncs it before the store switches to them,
// so a write costs what
// it changes, not the size of the registry, and a write that fails leaves
// the store as it was. Once the journal outgrows the snapshot it is folded
// into a new one (a temporary file, fsync, rename, fsync of the
// directory). A killed process loses no write that returned: Open replays
// the journal and drops a record cut short (with a warning); any other
// damage to either file, or a snapshot missing next to its journal, is
// refused (EINVALID naming the file, and the offset in the journal). The
// snapshot carries a checksum of its models. A process holds an exclusive
// lock on path+".lock" while the store is open: a second process (or a
// second Open) gets EUNAVAILABLE instead of two writers overwriting each
// other. The snapshot carries a format name and version; files of another
// format, a newer version or with unknown fields are refused. Reads run in
// parallel; writes are serialized, which also makes version allocation
// race-free.
//
// Errors are *forecast.Error values as registry.Store documents them, and
// EUNAVAILABLE when the file cannot be read, written or locked, or the
// store is closed.
package embedded

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
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
	log  *slog.Logger
	lock *os.File
	// save writes a snapshot, writeAt and syncFile the journal: saveFile,
	// (*os.File).WriteAt and Sync unless a test injects a failure.
	save     func(path string, data []byte) error
	writeAt  func(f *os.File, b []byte, off int64) (int, error)
	syncFile func(f *os.File) error
	// compactMin is the journal size below which it is not folded into
	// the snapshot: compactMin unless a test wants compactions.
	compactMin int64

	mu           sync.RWMutex
	st           *state // the writes' models are installed under mu
	journal      *journal
	snapshotSize int64
	closed       bool
	// broken is set when a sync of the journal failed: the file may hold
	// a write the store does not, or not hold one it does, so every call
	// fails until the registry is opened again.
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
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, unavailable("embedded: cannot create the registry directory", err)
	}
	lock, err := lockFile(path + ".lock")
	if err != nil {
		return nil, err
	}
	s := &Store{path: path, now: o.Now, log: o.Logger, lock: lock, save: saveFile, writeAt: (*os.File).WriteAt, syncFile: (*os.File).Sync,
		compactMin: compactMin}
	if err := s.load(); err != nil {
		_ = unlockFile(lock)
		return nil, err
	}
	removeTemps(path)
	return s, nil
}

// load reads the snapshot and replays the journal onto it. A registry
// without either file is created, snapshot first, so that a journal
// without its snapshot is always damage: the snapshot was lost, and
// replaying the journal alone would serve a fraction of the registry, so
// load refuses it. A snapshot of an older format version is rewritten in
// the current one, which older builds refuse.
func (s *Store) load() error {
	data, err := os.ReadFile(s.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if _, jerr := os.Lstat(s.path + journalSuffix); jerr == nil || !errors.Is(jerr, os.ErrNotExist) {
			return forecast.Errorf(forecast.EINVALID, "embedded: %s is missing but its journal %s%s is there: "+
				"the snapshot was deleted or lost; restore it (or remove the journal to start an empty registry)", s.path, s.path, journalSuffix)
		}
		s.st = newState()
		if err := s.saveSnapshot(); err != nil {
			return err
		}
		s.journal, err = openJournal(s.path, s.st, s.log)
		return err
	case err != nil:
		return unavailable("embedded: cannot read "+s.path, err)
	}
	var version int
	if s.st, version, err = decode(s.path, data); err != nil {
		return err
	}
	s.snapshotSize = int64(len(data))
	if s.journal, err = openJournal(s.path, s.st, s.log); err != nil {
		return err
	}
	if s.journal.size > 0 {
		err = checkState(s.path, s.st)
	}
	if err == nil && version != formatVersion {
		err = s.saveSnapshot()
	}
	if err != nil {
		s.journal.close()
	}
	return err
}

// saveSnapshot writes the whole state as the snapshot.
func (s *Store) saveSnapshot() error {
	data, err := encode(s.st)
	if err == nil {
		err = s.save(s.path, data)
	}
	if err != nil {
		return unavailable("embedded: cannot write "+s.path, err)
	}
	s.snapshotSize = int64(len(data))
	return nil
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
	jerr := s.journal.close()
	if err := errors.Join(jerr, unlockFile(s.lock)); err != nil {
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
		return &forecast.Error{Code: forecast.EUNAVAILABLE, Message: "embedded: a sync of the journal failed; open the registry again", Err: s.broken}
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

// update runs fn on a write (tx) over the current state with the time of
// the write in ms, appends the models it changed to the journal and
// installs them. When fn or the append fails, the store and its files
// keep the previous state.
func (s *Store) update(ctx context.Context, fn func(t *tx, now int64) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	t := newTx(s.st)
	if err := fn(t, s.now().UnixMilli()); err != nil {
		return err
	}
	line, err := encodeRecord(t.ops())
	if err != nil {
		return &forecast.Error{Code: forecast.EINTERNAL, Message: "embedded: cannot encode the write", Err: err}
	}
	if err := s.appendRecord(line); err != nil {
		if errors.As(err, new(*syncError)) {
			s.broken = err
		}
		return unavailable("embedded: cannot save the registry", err)
	}
	changed := t.aliasesChanged()
	t.commit()
	if err := s.compact(); errors.As(err, new(*syncError)) {
		s.broken = err // the write itself is in the snapshot
	}
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
