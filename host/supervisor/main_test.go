package supervisor_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/wakeonchat/wakeonchat/host/internal/e2e"
)

// Plugin binaries built once by TestMain.
var (
	conductorBin string
	openaiBin    string
	testBin      string
	protocol3Bin string
	garbageBin   string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// One build for all: the go command builds them in parallel, and links
	// again only what changed since the last run (e2e.BuildBinaries).
	dir, err := e2e.BuildBinaries(
		"./host/supervisor/testdata/testplugin",
		"./host/supervisor/testdata/garbage",
		"./host/supervisor/testdata/protocol3",
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, "build plugins:", err)
		return 1
	}
	conductorBin = filepath.Join(dir, e2e.ConductorBin)
	openaiBin = filepath.Join(dir, e2e.ProviderBin)
	testBin = filepath.Join(dir, "testplugin")
	garbageBin = filepath.Join(dir, "garbage")
	protocol3Bin = filepath.Join(dir, "protocol3")
	return m.Run()
}

// record is one captured log record.
type record struct {
	Level   slog.Level
	Message string
	Attrs   map[string]any
}

// recorder is a slog.Handler that keeps every record; handlers derived
// with WithAttrs share its store.
type recorder struct {
	store *logStore
	attrs []slog.Attr
}

type logStore struct {
	mu      sync.Mutex
	records []record
	added   chan struct{} // closed, and replaced, when a record is added
}

func newRecorder() *recorder { return &recorder{store: &logStore{added: make(chan struct{})}} }

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }

func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	attrs := map[string]any{}
	for _, a := range r.attrs {
		attrs[a.Key] = a.Value.Any()
	}
	rec.Attrs(func(a slog.Attr) bool {
		attrs[a.Key] = a.Value.Any()
		return true
	})
	r.store.mu.Lock()
	defer r.store.mu.Unlock()
	r.store.records = append(r.store.records, record{Level: rec.Level, Message: rec.Message, Attrs: attrs})
	close(r.store.added)
	r.store.added = make(chan struct{})
	return nil
}

func (r *recorder) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &recorder{store: r.store, attrs: append(slices.Clip(r.attrs), attrs...)}
}

func (r *recorder) WithGroup(string) slog.Handler { return r }

// all returns the records so far.
func (r *recorder) all() []record {
	r.store.mu.Lock()
	defer r.store.mu.Unlock()
	return append([]record(nil), r.store.records...)
}

// find returns the records whose message is msg.
func (r *recorder) find(msg string) []record {
	var out []record
	for _, rec := range r.all() {
		if rec.Message == msg {
			out = append(out, rec)
		}
	}
	return out
}

// await returns the records whose message is msg once there is at least
// one, or those there are after 5 s. A plugin's log line, which these
// tests are about, travels through its stderr pipe and may arrive just
// after the call that logged it returned: await looks again at each
// record added.
func (r *recorder) await(t *testing.T, msg string) []record {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		r.store.mu.Lock()
		added := r.store.added
		r.store.mu.Unlock()
		if recs := r.find(msg); len(recs) > 0 {
			return recs
		}
		select {
		case <-added:
		case <-timeout:
			return r.find(msg)
		}
	}
}
