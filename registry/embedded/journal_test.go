package embedded

import (
	"bufio"
	"context"
	"fmt"
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

// TestJournalTornTail: a record cut short by a crash (no newline, or a
// damaged last line) is dropped at Open and cut off the file; damage
// before an intact record is refused and the files are left as they are.
func TestJournalTornTail(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		note, tail string
		ok         bool
	}{
		{"half a record", `1234abcd {"ops": [{"put": {"name": "x"`, true},
		{"zeros", "\x00\x00\x00\x00", true},
		{"damaged last line", "00000000 {\"ops\": []}\n", true},
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

			s, err = Open(path, registry.Options{})
			if !tc.ok {
				if forecast.ErrorCode(err) != forecast.EINVALID || !strings.Contains(err.Error(), "record at byte") {
					t.Fatalf("Open = %v, want EINVALID naming the record", err)
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
			must(t, s.SetModelTag(context.Background(), "carbon-forecaster-DE", registry.Tag{Key: "after", Value: "1"}))
		})
	}
}

func mustRecord(tb testing.TB, ops []op) string {
	tb.Helper()
	line, err := encodeRecord(ops)
	must(tb, err)
	return string(line)
}

// TestOpenVersion1: a snapshot written before the journal existed opens,
// and is rewritten as version 2, which such builds refuse.
func TestOpenVersion1(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "registry.json")
	v1 := `{"format": "carbongate-registry", "version": 1, "models": [{"name": "m", "creation_time": 1, "last_updated_time": 1}]}`
	must(t, os.WriteFile(path, []byte(v1), 0o644))
	s := open(t, path, registry.Options{})
	if _, err := s.GetModel(context.Background(), "m"); err != nil {
		t.Fatal(err)
	}
	if got := files(t, path)[0]; !strings.Contains(got, `"version": 2`) {
		t.Fatalf("the snapshot was not rewritten as version 2:\n%s", got)
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
