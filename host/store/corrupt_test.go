package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/wakeonchat/wakeonchat/machines"
)

// goodStore is a closed store with some of everything: sessions of short
// turns, one session whose messages span overflow pages, pending markers and
// pod records, with deletes in between so that the file has free pages too.
type goodStore struct {
	data     []byte // the whole file
	pageSize int
	hwm      int   // the high-water mark in pages: pages [0, hwm) are in use or free
	inUse    []int // the pages at or above 2 that the tree reaches, overflow pages included
	heads    []int // of those, the ones with a page header (not an overflow page's tail)
}

func makeGoodStore(t *testing.T) goodStore {
	t.Helper()
	path := filepath.Join(t.TempDir(), "wake.db")
	s, err := Options{noSync: true}.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		session := fmt.Sprintf("session-%02d", i)
		for j := range 3 {
			if err := s.AppendTurn(t.Context(), session, Message{RoleUser, fmt.Sprintf("question %d", j)},
				Message{RoleAssistant, strings.Repeat("answer ", 20)}); err != nil {
				t.Fatal(err)
			}
		}
		if i%3 == 0 {
			if err := s.PutPending(t.Context(), session, testPending("k-"+session)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.AppendTurn(t.Context(), "long", Message{RoleUser, "tell me everything"},
		Message{RoleAssistant, strings.Repeat("a long answer ", 2000)}); err != nil {
		t.Fatal(err)
	}
	for _, pod := range []string{"qwen", "llama"} {
		if err := s.PutRecord(t.Context(), fullRecord(pod, time.Date(2026, 9, 9, 12, 26, 25, 0, time.UTC))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PruneHistory("session-07", 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// What the file holds, as bbolt sees it.
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, PreLoadFreelist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	g := goodStore{pageSize: db.Info().PageSize}
	err = db.View(func(tx *bolt.Tx) error {
		g.hwm = int(tx.Size()) / g.pageSize
		for id := 2; id < g.hwm; {
			p, err := tx.Page(id)
			if err != nil {
				return err
			}
			if p.Type == "free" {
				id++
				continue
			}
			g.heads = append(g.heads, id)
			for i := range p.OverflowCount + 1 {
				g.inUse = append(g.inUse, id+i)
			}
			id += p.OverflowCount + 1
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(g.inUse) < 10 || len(g.inUse) == g.hwm-2 {
		t.Fatalf("the good store has %d of %d pages in use: want at least 10, and some free", len(g.inUse), g.hwm)
	}
	if g.data, err = os.ReadFile(path); err != nil {
		t.Fatal(err)
	}
	return g
}

// caseFiles numbers caseFile's files.
var caseFiles atomic.Int64

// caseFile is a path of its own for t's store file in dir, a directory of
// t's parent, removed at t's cleanup: the corruption suites have hundreds
// of cases, and a t.TempDir each was a directory made and removed for
// every one of them.
func caseFile(t *testing.T, dir string) string {
	path := filepath.Join(dir, fmt.Sprintf("wake-%d.db", caseFiles.Add(1)))
	t.Cleanup(func() { os.Remove(path) })
	return path
}

// copies are the buffers of the damaged copies of the good store's file,
// reused: the corruption suites make hundreds of copies of half a
// megabyte, and collecting them was a good part of the package's CPU.
var copies sync.Pool

// copyOf is a copy of data, in a buffer of copies; writeCopy gives it
// back.
func copyOf(data []byte) []byte {
	if b, ok := copies.Get().(*[]byte); ok && cap(*b) >= len(data) {
		return append((*b)[:0], data...)
	}
	return bytes.Clone(data)
}

// writeCopy writes data, a copyOf, to a new file at path, and gives its
// buffer back to copies.
func writeCopy(t *testing.T, path string, data []byte) {
	t.Helper()
	err := os.WriteFile(path, data, 0o600)
	copies.Put(&data)
	if err != nil {
		t.Fatal(err)
	}
}

// corruption makes a damaged copy of the good store's file (copyOf).
type corruption struct {
	name   string
	damage func(g goodStore) []byte
}

func truncated(name string, size func(g goodStore) int) corruption {
	return corruption{name: "truncated to " + name, damage: func(g goodStore) []byte {
		return copyOf(g.data[:size(g)])
	}}
}

// garbage overwrites page id with seeded random bytes.
func garbage(g goodStore, id int, seed uint64) []byte {
	return garbageAt(g.data, id*g.pageSize, g.pageSize, seed)
}

// garbageAt overwrites n bytes of a copy of data from off with seeded random
// bytes.
func garbageAt(data []byte, off, n int, seed uint64) []byte {
	data = copyOf(data)
	r := rand.New(rand.NewPCG(seed, 0))
	for i := off; i < off+n && i < len(data); i++ {
		data[i] = byte(r.Uint32())
	}
	return data
}

// wrongMagic sets the magic number of the meta pages ids to 0.
func wrongMagic(g goodStore, ids ...int) []byte {
	data := copyOf(g.data)
	for _, id := range ids {
		copy(data[id*g.pageSize+16:], []byte{0, 0, 0, 0})
	}
	return data
}

// seeds is how many random pages each kind of garbage goes over.
const seeds = 100

func corruptions(g goodStore) []corruption {
	cs := []corruption{
		truncated("0 bytes", func(goodStore) int { return 0 }),
		truncated("1 byte", func(goodStore) int { return 1 }),
		truncated("half a page", func(g goodStore) int { return g.pageSize / 2 }),
		truncated("one page", func(g goodStore) int { return g.pageSize }),
		truncated("one page and a half", func(g goodStore) int { return g.pageSize * 3 / 2 }),
		truncated("the meta pages", func(g goodStore) int { return 2 * g.pageSize }),
		truncated("mid-file", func(g goodStore) int { return g.hwm * g.pageSize / 2 }),
		truncated("one byte short", func(g goodStore) int { return g.hwm*g.pageSize - 1 }),
		{"wrong magic in both meta pages", func(g goodStore) []byte { return wrongMagic(g, 0, 1) }},
		{"garbage in pages 2 and 3", func(g goodStore) []byte {
			return garbageAt(garbage(g, 2, 1), 3*g.pageSize, g.pageSize, 2)
		}},
	}
	// Garbage over a random page of the tree, many times over; then garbage
	// over all of a page but its header, so that the page still says it is
	// itself and its elements, keys and values are what is wrong.
	for seed := range uint64(seeds) {
		id := g.inUse[rand.New(rand.NewPCG(seed, 1)).IntN(len(g.inUse))]
		cs = append(cs, corruption{fmt.Sprintf("garbage in page %d (seed %d)", id, seed), func(g goodStore) []byte {
			return garbage(g, id, seed)
		}})
	}
	for seed := range uint64(seeds) {
		id := g.heads[rand.New(rand.NewPCG(seed, 2)).IntN(len(g.heads))]
		cs = append(cs, corruption{fmt.Sprintf("garbage in page %d after its header (seed %d)", id, seed), func(g goodStore) []byte {
			return garbageAt(g.data, id*g.pageSize+16, g.pageSize-16, seed)
		}})
	}
	// And garbage over a page's keys and values only, after its element
	// array, so that every element still points inside the page.
	for seed := range uint64(seeds) {
		id := g.heads[rand.New(rand.NewPCG(seed, 4)).IntN(len(g.heads))]
		count := int(binary.NativeEndian.Uint16(g.data[id*g.pageSize+10:]))
		from := id*g.pageSize + 16 + 16*count
		cs = append(cs, corruption{fmt.Sprintf("garbage in page %d's keys and values (seed %d)", id, seed), func(g goodStore) []byte {
			return garbageAt(g.data, from, (id+1)*g.pageSize-from, seed)
		}})
	}
	return cs
}

// TestOpenRefusesCorruptStore: every truncated or damaged store stops Open
// with one line that names the file, says it is corrupt and says what to
// do. None may crash the test binary (SIGBUS, a bbolt assertion) or open.
func TestOpenRefusesCorruptStore(t *testing.T) {
	t.Parallel()
	g := makeGoodStore(t)
	dir := t.TempDir()
	for _, c := range corruptions(g) {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // each check is a process: most of its time is its start
			path := caseFile(t, dir)
			writeCopy(t, path, c.damage(g))
			s, err := Open(path)
			if err == nil {
				s.Close()
				t.Fatalf("Open of a store %s succeeded, want ErrCorrupt", c.name)
			}
			checkCorruptError(t, err, path)
		})
	}
}

// TestCorruptErrorSaysWhat: the problem in the one line is in words for an
// operator: the truncation the README quotes, and bbolt's description of a
// broken page without the words of a crash. Whether bbolt crashes on that
// page or its check reports it first is a race inside bbolt (it reloads
// its freelist in a goroutine of its own), so either wording passes.
func TestCorruptErrorSaysWhat(t *testing.T) {
	t.Parallel()
	g := makeGoodStore(t)
	tests := []struct {
		c    corruption
		want string // a regular expression
	}{
		{truncated("mid-file", func(g goodStore) int { return g.hwm * g.pageSize / 2 }),
			regexp.QuoteMeta(fmt.Sprintf("is corrupt: it is truncated to %d bytes; its last transaction needs %d pages of %d bytes; ",
				g.hwm*g.pageSize/2, g.hwm, g.pageSize))},
		{corruption{"garbage in pages 2 and 3", func(g goodStore) []byte {
			return garbageAt(garbage(g, 2, 1), 3*g.pageSize, g.pageSize, 2)
		}}, `is corrupt: (bbolt crashed reading it|bbolt's check): Page expected to be: `},
	}
	for _, tt := range tests {
		t.Run(tt.c.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "wake.db")
			if err := os.WriteFile(path, tt.c.damage(g), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Open(path)
			if err == nil || !regexp.MustCompile(tt.want).MatchString(err.Error()) {
				t.Errorf("Open: %v\nwant it to match %q", err, tt.want)
			}
		})
	}
}

// checkCorruptError: err is ErrCorrupt, one line, naming path and the two
// ways out.
func checkCorruptError(t *testing.T, err error, path string) {
	t.Helper()
	msg := err.Error()
	if !errors.Is(err, ErrCorrupt) {
		t.Errorf("Open: %v\nwant an error wrapping ErrCorrupt", err)
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("Open's error has more than one line: %q", msg)
	}
	for _, want := range []string{"store " + path + " is corrupt", "move the file aside", "restore it from a backup"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Open: %q\nwant it to say %q", msg, want)
		}
	}
}

// TestOpenAcceptsHarmlessDamage: damage bbolt recovers from, or that touches
// nothing the store uses, opens, and every record is still there.
func TestOpenAcceptsHarmlessDamage(t *testing.T) {
	t.Parallel()
	g := makeGoodStore(t)
	free := -1
	for id, n := 2, 0; id < g.hwm; id++ {
		if n < len(g.inUse) && g.inUse[n] == id {
			n++
			continue
		}
		free = id
		break
	}
	tests := []corruption{
		// A torn write of the newer meta page: bbolt falls back to the older
		// one, the transaction before; both meta pages are checked.
		{"wrong magic in meta page 0", func(g goodStore) []byte { return wrongMagic(g, 0) }},
		{"wrong magic in meta page 1", func(g goodStore) []byte { return wrongMagic(g, 1) }},
		{"garbage in a free page", func(g goodStore) []byte { return garbage(g, free, 7) }},
		// The file is longer than its pages: bbolt grows it ahead.
		truncated("its high-water mark", func(g goodStore) int { return g.hwm * g.pageSize }),
	}
	for _, c := range tests {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "wake.db")
			if err := os.WriteFile(path, c.damage(g), 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := Open(path)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer s.Close()
			msgs, err := s.History(t.Context(), "session-59", 100)
			if err != nil || len(msgs) == 0 {
				t.Errorf("History after opening: %d messages, %v", len(msgs), err)
			}
			if r, err := s.Record(t.Context(), "qwen"); err != nil || r.Pod != "qwen" || r == machines.NewRecord("qwen") {
				t.Errorf("Record after opening: %+v, %v", r, err)
			}
		})
	}
}

// TestOpenNeverCrashes: random bytes over a random stretch of the file,
// anywhere, meta pages and free pages included. Some of it is harmless (a
// page's unused end, a free page, an older meta page); whatever it hits, the
// store either refuses to open with ErrCorrupt, or opens and every record
// in it can be read.
func TestOpenNeverCrashes(t *testing.T) {
	t.Parallel()
	g := makeGoodStore(t)
	dir := t.TempDir()
	var refused atomic.Int32
	t.Run("seeds", func(t *testing.T) {
		for seed := range uint64(200) {
			t.Run(fmt.Sprint(seed), func(t *testing.T) {
				t.Parallel()
				r := rand.New(rand.NewPCG(seed, 3))
				n := 1 + r.IntN(2*g.pageSize)
				off := r.IntN(len(g.data))
				path := caseFile(t, dir)
				writeCopy(t, path, garbageAt(g.data, off, n, seed))
				// Without fsync: what is on trial is what Open makes of
				// the file, not the disk.
				s, err := Options{noSync: true}.Open(path)
				if err != nil {
					refused.Add(1)
					checkCorruptError(t, err, path)
					return
				}
				defer s.Close()
				for i := range 60 {
					if _, err := s.History(t.Context(), fmt.Sprintf("session-%02d", i), 100); err != nil {
						t.Errorf("%d bytes at %d: History: %v", n, off, err)
					}
				}
				if _, err := s.Records(t.Context()); err != nil {
					t.Errorf("%d bytes at %d: Records: %v", n, off, err)
				}
			})
		}
	})
	t.Logf("%d of 200 damaged stores refused", refused.Load())
}

// TestOpenRefusesEmptyFile: bbolt would turn a 0-byte file into a fresh
// store and lose every record without a word; Open refuses it, while an
// absent file is created.
func TestOpenRefusesEmptyFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "wake.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Open(path)
	checkCorruptError(t, err, path)
	if !strings.Contains(err.Error(), "empty") {
		t.Errorf("Open of a 0-byte file: %v\nwant it to say the file is empty", err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		t.Errorf("the refused file was changed: %v, %v", fi, err)
	}
}

// TestOpenRunsBboltCheck: what only bbolt's own check sees is refused too.
// A file written with its freelist synced (bbolt's default; the store
// writes none) whose freelist lists a page the tree still uses: the walk
// over the tree finds nothing wrong, bbolt's check finds the page both used
// and free, which would have bbolt hand it out again and overwrite it.
func TestOpenRunsBboltCheck(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "wake.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 { // every commit frees the pages it rewrote
		err := db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists(bucketPods)
			if err != nil {
				return err
			}
			return b.Put([]byte(fmt.Sprintf("pod-%02d", i)), []byte(`{}`))
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	var freelist, root uint64
	var pageSize int
	err = db.View(func(tx *bolt.Tx) error {
		pageSize = db.Info().PageSize
		root = uint64(tx.Bucket(bucketPods).Root())
		for id := 2; ; id++ {
			p, err := tx.Page(id)
			if err != nil || p == nil {
				return fmt.Errorf("no freelist page: %v", err)
			}
			if p.Type == "freelist" {
				freelist = uint64(id)
				return nil
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	off := int(freelist)*pageSize + 16
	if n := binary.NativeEndian.Uint16(data[int(freelist)*pageSize+10:]); n == 0 || n == 0xFFFF {
		t.Fatalf("freelist page %d lists %d pages, want a few", freelist, n)
	}
	binary.NativeEndian.PutUint64(data[off:], root) // its first free page is now the pods bucket's root
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}

	s, err := Open(path)
	if err == nil {
		s.Close()
		t.Fatal("Open of a store whose freelist lists a used page succeeded, want ErrCorrupt")
	}
	checkCorruptError(t, err, path)
	if want := fmt.Sprintf("bbolt's check: page %d: reachable freed", root); !strings.Contains(err.Error(), want) {
		t.Errorf("Open: %v\nwant it to say %q", err, want)
	}
}

func testPending(key string) Pending {
	wake := time.Date(2026, 9, 9, 14, 3, 0, 0, cest)
	return Pending{
		Key: key, Pod: "gpu-a", Provider: "vllm", WakeRequestedAt: wake,
		State: "waking", CreatedAt: wake.Add(time.Second),
	}
}
