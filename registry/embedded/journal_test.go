package embedded

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
)

// TestJournalTornTail: only an incomplete last line that starts like a
// record (an append cut short by a crash) is dropped at Open, with a
// warning naming the file and the offset, and cut off the file. Any other
// damage, the last line included, is refused naming the file and the
// offset, and the files are left as they are.
func TestJournalTornTail(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		note, tail string
		ok         bool
	}{
		{"half a record", `1234abcd {"ops": [{"put": {"name": "x"`, true},
		{"only the checksum's start", "12", true},
		{"zeros", "\x00\x00\x00\x00", false},
		{"zeros after a checksum", "1234abcd {\"ops\": [\x00\x00\x00", false},
		{"damaged last line", "00000000 {\"ops\": []}\n", false},
		{"a flipped byte in the last record", flipped(t, mustRecord(t, []op{{Delete: "carbon-forecaster-generic"}})), false},
		{"damaged line before an intact one", "00000000 {\"ops\": []}\n" + mustRecord(t, []op{{Delete: "carbon-forecaster-generic"}}), false},
	} {
		t.Run(tc.note, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "registry.json")
			s := open(t, path, registry.Options{Now: fixedClock()})
			populate(t, s)
			before := snap(t, s)
			must(t, s.Close())
			good := files(t, path)
			f, err := os.OpenFile(path+journalSuffix, os.O_APPEND|os.O_WRONLY, 0)
			must(t, err)
			_, err = f.WriteString(tc.tail)
			must(t, err)
			must(t, f.Close())
			damaged := files(t, path)

			var logs bytes.Buffer
			o := registry.Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil))}
			s, err = Open(path, o)
			at := fmt.Sprintf("byte %d", len(good[1]))
			if !tc.ok {
				if forecast.ErrorCode(err) != forecast.EINVALID || !strings.Contains(err.Error(), path+journalSuffix) || !strings.Contains(err.Error(), "record at "+at) {
					t.Fatalf("Open = %v, want EINVALID naming the journal and the record at %s", err, at)
				}
				if got := files(t, path); got != damaged {
					t.Fatal("Open changed files it refused")
				}
				return
			}
			must(t, err)
			t.Cleanup(func() { s.Close() })
			if got := snap(t, s); !reflect.DeepEqual(got, before) {
				t.Fatalf("after reopening:\n got %+v\nwant %+v", got, before)
			}
			if got := files(t, path); got != good {
				t.Fatal("the torn tail was not cut off")
			}
			if w := logs.String(); !strings.Contains(w, `"level":"WARN"`) || !strings.Contains(w, fmt.Sprintf(`"offset":%d`, len(good[1]))) ||
				!strings.Contains(w, journalSuffix) {
				t.Fatalf("no warning naming the journal and the offset: %s", w)
			}
			must(t, s.SetModelTag(context.Background(), "carbon-forecaster-DE", registry.Tag{Key: "after", Value: "1"}))
		})
	}
}

// flipped returns line with one bit of its JSON flipped.
func flipped(tb testing.TB, line string) string {
	tb.Helper()
	b := []byte(line)
	b[len(b)/2] ^= 0x04
	return string(b)
}

func mustRecord(tb testing.TB, ops []op) string {
	tb.Helper()
	line, err := encodeRecord(ops)
	must(tb, err)
	return string(line)
}

// TestOpenVersion1: a snapshot written before the journal existed opens,
// and is rewritten in the current version, with a checksum, which such
// builds refuse.
func TestOpenVersion1(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "registry.json")
	v1 := `{"format": "carbongate-registry", "version": 1, "models": [{"name": "m", "creation_time": 1, "last_updated_time": 1}]}`
	must(t, os.WriteFile(path, []byte(v1), 0o644))
	s := open(t, path, registry.Options{})
	if _, err := s.GetModel(context.Background(), "m"); err != nil {
		t.Fatal(err)
	}
	if got := files(t, path)[0]; !strings.Contains(got, fmt.Sprintf(`"version": %d`, formatVersion)) || !strings.Contains(got, `"checksum": "crc32c:`) {
		t.Fatalf("the snapshot was not rewritten as version %d with a checksum:\n%s", formatVersion, got)
	}
}

// killChild is set in the environment of the process TestKill kills.
const killChild = "CARBONGATE_EMBEDDED_KILL_CHILD"

// TestKill kills (SIGKILL) a process in the middle of writing, with
// compactions happening, and checks that every write it had acknowledged
// is there after reopening, and nothing half-written.
func TestKill(t *testing.T) {
	if path := os.Getenv(killChild); path != "" {
		writeUntilKilled(path)
		return
	}
	t.Parallel()
	path := filepath.Join(t.TempDir(), "registry.json")
	cmd := exec.Command(os.Args[0], "-test.run=^TestKill$", "-test.count=1")
	cmd.Env = append(os.Environ(), killChild+"="+path)
	out, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	sc := bufio.NewScanner(out)
	acked := -1
	const killAfter, total = 150, 1_000_000
	for sc.Scan() {
		if n, err := strconv.Atoi(strings.TrimPrefix(sc.Text(), "ack ")); err == nil {
			acked = n
		}
		if acked == killAfter {
			must(t, cmd.Process.Signal(syscall.SIGKILL))
		}
	}
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the writer was not killed (%v): the test proves nothing", err)
	}
	if acked < killAfter || acked >= total-1 {
		t.Fatalf("acknowledged %d writes: the kill did not land mid-run", acked)
	}
	if snapshot := files(t, path)[0]; !strings.Contains(snapshot, `"m-000000"`) {
		t.Fatal("no compaction happened before the kill")
	}
	s := open(t, path, registry.Options{})
	ctx := context.Background()
	for i := 0; i <= acked; i++ {
		name := fmt.Sprintf("m-%06d", i)
		v, err := s.VersionByAlias(ctx, name, registry.ChampionAlias)
		if err != nil || v.Version != 1 || v.Description != killDescription {
			t.Fatalf("acknowledged write %d lost after the kill: %+v, %v", i, v, err)
		}
	}
	models, _, err := s.SearchModels(ctx, registry.Search{MaxResults: MaxResults})
	must(t, err)
	if len(models) > acked+2 {
		t.Fatalf("%d models after %d acknowledged writes", len(models), acked+1)
	}
	t.Logf("killed after %d acknowledged writes (3 records each, compacting every ~64 KiB); all there, %d models", acked+1, len(models))
}

var killDescription = strings.Repeat("d", 1000)

// writeUntilKilled is the killed process: it writes model after model,
// compacting often, and prints "ack i" once model i is fully written.
func writeUntilKilled(path string) {
	s, err := Open(path, registry.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	s.compactMin = 64 << 10
	ctx := context.Background()
	for i := 0; i < 1_000_000; i++ {
		name := fmt.Sprintf("m-%06d", i)
		_, err := s.CreateModel(ctx, name, killDescription, nil)
		if err == nil {
			_, err = s.CreateVersion(ctx, registry.NewVersion{Name: name, Source: "s3://b/" + name, Description: killDescription})
		}
		if err == nil {
			err = s.SetAlias(ctx, name, registry.ChampionAlias, 1)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Printf("ack %d\n", i)
	}
	time.Sleep(time.Hour)
}
