package embedded

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"

	"github.com/carbongate/carbongate/forecast"
)

// The journal, path+".journal", holds the writes made since the snapshot
// (path) was last written: one record a line, "<crc32c of the JSON, 8 hex
// digits> <JSON {"ops": [...]}>\n", appended and synced before the write
// returns. A record only sets whole fields to their new values, so
// replaying one the snapshot already holds changes nothing: the journal
// is replayed in full onto whatever snapshot is on disk, and a crash
// between writing a snapshot and emptying the journal loses nothing.
//
// A crash during an append leaves at most one incomplete last line; Open
// drops it (that write never returned) and logs a warning. Any other
// damage (a complete line whose checksum fails, a last line that is not
// the start of a record) is refused: Open fails with EINVALID naming the
// file and the offset.

// journalSuffix names the journal of a registry file.
const journalSuffix = ".journal"

// compactMin is the journal size below which it is never folded into the
// snapshot; above it, it is once it outgrows the snapshot, so the bytes
// written per write stay proportional to the write, amortized.
const compactMin = 1 << 20

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

type record struct {
	Ops []op `json:"ops"`
}

// encodeRecord returns ops as one journal line.
func encodeRecord(ops []op) ([]byte, error) {
	body, err := json.Marshal(record{Ops: ops})
	if err != nil {
		return nil, err
	}
	line := make([]byte, 0, len(body)+10)
	line = fmt.Appendf(line, "%08x ", crc32.Checksum(body, castagnoli))
	line = append(line, body...)
	return append(line, '\n'), nil
}

// decodeRecord parses one journal line without its newline.
func decodeRecord(line []byte) ([]op, error) {
	sum, body, ok := bytes.Cut(line, []byte{' '})
	var want [4]byte
	if !ok || len(sum) != 8 {
		return nil, errors.New("no checksum")
	}
	if _, err := hex.Decode(want[:], sum); err != nil {
		return nil, errors.New("no checksum")
	}
	if crc32.Checksum(body, castagnoli) != uint32(want[0])<<24|uint32(want[1])<<16|uint32(want[2])<<8|uint32(want[3]) {
		return nil, errors.New("checksum mismatch")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var r record
	if err := dec.Decode(&r); err != nil {
		return nil, err
	}
	return r.Ops, nil
}

// replay applies the journal data onto st and returns the length of its
// intact records. Only an incomplete last line (no newline) that reads as
// the start of a record is left out: an append cut short by a crash,
// whose write never returned. Anything else, a complete line that does not
// decode or apply (its checksum fails, say) or a last line that is not the
// start of a record (zeros, say), is damage, and replay refuses it with
// EINVALID naming the file and the offset: dropping it silently would
// serve an older registry as if it were current.
func replay(path string, st *state, data []byte) (int64, error) {
	var good int64
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			if tornRecord(data) {
				return good, nil
			}
			return 0, damagedJournal(path, good, errors.New("the last line is neither a record nor the start of one"))
		}
		ops, err := decodeRecord(data[:i])
		if err == nil {
			err = st.apply(ops)
		}
		if err != nil {
			return 0, damagedJournal(path, good, err)
		}
		good += int64(i + 1)
		data = data[i+1:]
	}
	return good, nil
}

func damagedJournal(path string, offset int64, err error) error {
	return forecast.Errorf(forecast.EINVALID, "embedded: %s%s is damaged: record at byte %d: %v; "+
		"the registry is not opened (truncating the journal at that byte drops that write and every later one)",
		path, journalSuffix, offset, err)
}

// tornRecord reports whether tail (a last line without its newline) is
// the start of what encodeRecord writes: up to 8 lowercase hex digits,
// then a space and JSON, which holds no control characters.
func tornRecord(tail []byte) bool {
	for i, c := range tail {
		switch {
		case i < 8:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		case i == 8:
			if c != ' ' {
				return false
			}
		case i == 9:
			if c != '{' {
				return false
			}
		case c < 0x20 || c == 0x7f:
			return false
		}
	}
	return true
}

// journal is the open journal file.
type journal struct {
	f    *os.File
	size int64 // the intact records' bytes; appends go here
}

// openJournal opens (creating) the journal of path, replays it onto st
// and cuts off a torn last record, which it logs.
func openJournal(path string, st *state, log *slog.Logger) (*journal, error) {
	f, err := os.OpenFile(path+journalSuffix, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, unavailable("embedded: cannot open the journal", err)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		f.Close()
		return nil, unavailable("embedded: cannot read the journal", err)
	}
	good, err := replay(path, st, data)
	if err == nil && good < int64(len(data)) {
		log.Warn("embedded registry: dropping an incomplete last journal record (a write cut short by a crash; it was never acknowledged)",
			"file", path+journalSuffix, "offset", good, "bytes", int64(len(data))-good)
		if err = f.Truncate(good); err == nil {
			err = f.Sync()
		}
		if err != nil {
			err = unavailable("embedded: cannot cut the torn end of the journal", err)
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return &journal{f: f, size: good}, nil
}

// syncError reports a failed sync of the journal: the record may or may
// not be on disk, so the store stops until it is opened again.
type syncError struct{ err error }

func (e *syncError) Error() string { return "sync journal: " + e.err.Error() }
func (e *syncError) Unwrap() error { return e.err }

// appendRecord writes line at the end of the journal and syncs it. A
// failed write is cut off again (when even that fails, or the sync fails,
// the error is a *syncError).
func (s *Store) appendRecord(line []byte) error {
	j := s.journal
	if _, err := s.writeAt(j.f, line, j.size); err != nil {
		if terr := j.f.Truncate(j.size); terr != nil {
			return &syncError{err: errors.Join(err, terr)}
		}
		return err
	}
	if err := s.syncFile(j.f); err != nil {
		return &syncError{err: err}
	}
	j.size += int64(len(line))
	return nil
}

// compact folds the journal into a new snapshot once it has outgrown it,
// then empties the journal. It runs after a write has been synced, so a
// failure before the journal is emptied loses nothing (the journal still
// holds every write, and a snapshot that reached the disk holds nothing
// the journal does not replay): it is tried again after the next write.
// Only a failed sync of the emptied journal is a *syncError.
func (s *Store) compact() error {
	if s.journal.size < max(s.compactMin, s.snapshotSize) {
		return nil
	}
	data, err := encode(s.st)
	if err != nil {
		return err
	}
	if err := s.save(s.path, data); err != nil {
		return err
	}
	s.snapshotSize = int64(len(data))
	if err := s.journal.f.Truncate(0); err != nil {
		return err
	}
	s.journal.size = 0
	if err := s.syncFile(s.journal.f); err != nil {
		return &syncError{err: err}
	}
	return nil
}

func (j *journal) close() error { return j.f.Close() }
