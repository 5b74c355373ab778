package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
)

// This file reads a bbolt file (format version 2) with plain reads, never
// through a memory map, and checks that every page the tree reaches is
// where its parent says, is of a type that may be there, and keeps its keys,
// values and child pointers inside the file. bbolt itself trusts all of
// that: it maps the file and follows pointers without bounds checks, in
// goroutines of its own (the walk that rebuilds the freelist in Open, and
// Tx.Check), so a damaged page either fails an assertion there (a panic no
// caller can recover) or points past the end of the file (SIGBUS, a fatal
// runtime error). A file that passes this walk can be handed to bbolt: its
// remaining checks (key order, pages reached twice, unreachable pages) then
// return errors instead of crashing.
//
// bbolt's own page reader is internal to its module, so the few fields the
// walk needs are read here. The layout is bbolt's internal/common, in the
// machine's byte order (bbolt casts the mapped bytes to structs):
//
//	page header (16 bytes): id u64, flags u16, count u16, overflow u32
//	meta (after the header): magic u32, version u32, pageSize u32, flags u32,
//	  root bucket {root pgid u64, sequence u64}, freelist pgid u64,
//	  pgid (high-water mark) u64, txid u64, checksum u64 (FNV-64a of the
//	  meta's bytes before it)
//	branch element (16 bytes): pos u32, ksize u32, pgid u64
//	leaf element (16 bytes): flags u32, pos u32, ksize u32, vsize u32
//	  (pos counts from the element; the value follows the key)
//	bucket value: root pgid u64, sequence u64, then, when root is 0, the
//	  bucket's own leaf page inline

const (
	pageHeaderSize = 16
	elementSize    = 16
	bucketHeader   = 16
	metaChecksumAt = pageHeaderSize + 56

	boltMagic   = 0xED0CDAED
	boltVersion = 2

	branchPage   = 0x01
	leafPage     = 0x02
	metaPage     = 0x04
	freelistPage = 0x10

	bucketLeafFlag = 0x01

	noFreelist = ^uint64(0)

	// maxDepth bounds the walk: nested buckets and the B+tree levels under
	// each, far more than any store of ours has.
	maxDepth = 64
)

var native = binary.NativeEndian

// meta is a valid meta page's fields the walk uses.
type meta struct {
	pageSize int
	root     uint64
	freelist uint64
	pgid     uint64 // the high-water mark: pages [0, pgid) are used or free
	txid     uint64
}

// readMeta parses the meta page in b (at least a page header and a meta);
// it returns a description of what is wrong when the page is not a valid
// meta page.
func readMeta(b []byte) (meta, string) {
	if len(b) < metaChecksumAt+8 {
		return meta{}, "it is shorter than a meta page"
	}
	m := b[pageHeaderSize:]
	switch {
	case native.Uint32(m[0:]) != boltMagic:
		return meta{}, "it is not a bbolt file (wrong magic number)"
	case native.Uint32(m[4:]) != boltVersion:
		return meta{}, fmt.Sprintf("it has bbolt format version %d, want %d", native.Uint32(m[4:]), boltVersion)
	}
	h := fnv.New64a()
	h.Write(b[pageHeaderSize:metaChecksumAt])
	if h.Sum64() != native.Uint64(b[metaChecksumAt:]) {
		return meta{}, "its checksum does not match"
	}
	return meta{
		pageSize: int(native.Uint32(m[8:])),
		root:     native.Uint64(m[16:]),
		freelist: native.Uint64(m[32:]),
		pgid:     native.Uint64(m[40:]),
		txid:     native.Uint64(m[48:]),
	}, ""
}

// fileCheck walks one file.
type fileCheck struct {
	f    *os.File
	m    meta
	seen map[uint64]bool // every page reached, overflow pages included
}

// checkFile checks the bbolt file f of size bytes; the error describes the
// first problem found, in words for an operator.
func checkFile(f *os.File, size int64) error {
	m, err := pickMeta(f, size)
	if err != nil {
		return err
	}
	if m.pgid > uint64(size)/uint64(m.pageSize) {
		return fmt.Errorf("it is truncated to %d bytes; its last transaction needs %d pages of %d bytes",
			size, m.pgid, m.pageSize)
	}
	if m.pgid < 3 {
		return fmt.Errorf("its high-water mark is page %d, below its first tree page", m.pgid)
	}
	c := &fileCheck{f: f, m: m, seen: map[uint64]bool{0: true, 1: true}}
	if m.freelist != noFreelist {
		if err := c.checkFreelist(); err != nil {
			return err
		}
	}
	return c.checkNode(m.root, nil, nil, 0)
}

// pickMeta finds the page size and chooses the meta page bbolt will use:
// the valid one with the higher transaction id. Like bbolt, it reads the
// page size from meta page 0, or, when page 0 is damaged, looks for meta
// page 1 at every power of two from 1 KiB.
func pickMeta(f *os.File, size int64) (meta, error) {
	if size < metaChecksumAt+8 {
		return meta{}, fmt.Errorf("it is truncated to %d bytes, shorter than its two meta pages", size)
	}
	buf := make([]byte, metaChecksumAt+8)
	if _, err := f.ReadAt(buf, 0); err != nil {
		return meta{}, fmt.Errorf("reading meta page 0: %w", err)
	}
	m0, bad0 := readMeta(buf)
	pageSize := m0.pageSize
	if bad0 != "" {
		for ps := int64(1024); ps < 1<<25 && ps+int64(len(buf)) <= size; ps *= 2 {
			if _, err := f.ReadAt(buf, ps); err != nil {
				return meta{}, fmt.Errorf("reading meta page 1: %w", err)
			}
			if m, bad := readMeta(buf); bad == "" && int64(m.pageSize) == ps {
				pageSize = m.pageSize
				break
			}
		}
	}
	if pageSize == 0 {
		return meta{}, fmt.Errorf("neither meta page is valid: meta page 0: %s, and no meta page 1 was found", bad0)
	}
	if pageSize < 1024 || pageSize&(pageSize-1) != 0 {
		return meta{}, fmt.Errorf("its page size %d is not a power of two of at least 1 KiB", pageSize)
	}
	if size < 2*int64(pageSize) {
		return meta{}, fmt.Errorf("it is truncated to %d bytes, shorter than its two meta pages of %d bytes", size, pageSize)
	}
	var ms [2]meta
	var bad [2]string
	for i := range ms {
		if _, err := f.ReadAt(buf, int64(i*pageSize)); err != nil {
			return meta{}, fmt.Errorf("reading meta page %d: %w", i, err)
		}
		ms[i], bad[i] = readMeta(buf)
		if bad[i] == "" && ms[i].pageSize != pageSize {
			bad[i] = fmt.Sprintf("its page size %d differs from the other's, %d", ms[i].pageSize, pageSize)
		}
	}
	switch {
	case bad[0] != "" && bad[1] != "":
		return meta{}, fmt.Errorf("neither meta page is valid: meta page 0: %s; meta page 1: %s", bad[0], bad[1])
	case bad[0] != "":
		return ms[1], nil
	case bad[1] != "":
		return ms[0], nil
	case ms[1].txid > ms[0].txid:
		return ms[1], nil
	}
	return ms[0], nil
}

// page reads page id whole (its overflow pages included), after checking
// that it is inside the high-water mark, says it is page id, has one of
// the types in want, and was not reached before.
func (c *fileCheck) page(id uint64, want ...uint16) ([]byte, error) {
	ps := uint64(c.m.pageSize)
	if id < 2 || id >= c.m.pgid {
		return nil, fmt.Errorf("a pointer to page %d, outside pages 2 to %d", id, c.m.pgid-1)
	}
	b := make([]byte, ps)
	if _, err := c.f.ReadAt(b, int64(id*ps)); err != nil {
		return nil, fmt.Errorf("reading page %d: %w", id, err)
	}
	got, flags, overflow := native.Uint64(b), native.Uint16(b[8:]), uint64(native.Uint32(b[12:]))
	switch {
	case got != id:
		return nil, fmt.Errorf("page %d says it is page %d", id, got)
	case !typeIn(flags, want):
		return nil, fmt.Errorf("page %d has type %#x where a %s page belongs", id, flags, typeNames(want))
	case id+overflow >= c.m.pgid:
		return nil, fmt.Errorf("page %d runs past the high-water mark (%d overflow pages)", id, overflow)
	}
	for i := id; i <= id+overflow; i++ {
		if c.seen[i] {
			return nil, fmt.Errorf("page %d is reached twice", i)
		}
		c.seen[i] = true
	}
	if overflow > 0 {
		b = append(b, make([]byte, overflow*ps)...)
		if _, err := c.f.ReadAt(b[ps:], int64((id+1)*ps)); err != nil {
			return nil, fmt.Errorf("reading page %d: %w", id, err)
		}
	}
	return b, nil
}

func typeIn(flags uint16, want []uint16) bool {
	for _, w := range want {
		if flags == w {
			return true
		}
	}
	return false
}

func typeNames(want []uint16) string {
	names := map[uint16]string{branchPage: "branch", leafPage: "leaf", metaPage: "meta", freelistPage: "freelist"}
	s := ""
	for i, w := range want {
		if i > 0 {
			s += " or "
		}
		s += names[w]
	}
	return s
}

// checkFreelist checks the freelist page of a file written with its
// freelist synced (the store writes none, but bbolt reads one when it is
// there).
func (c *fileCheck) checkFreelist() error {
	id := c.m.freelist
	b, err := c.page(id, freelistPage)
	if err != nil {
		return fmt.Errorf("freelist: %w", err)
	}
	n, at := uint64(native.Uint16(b[10:])), uint64(pageHeaderSize)
	if n == 0xFFFF { // the count did not fit: it is the first id
		n, at = native.Uint64(b[at:]), at+8
	}
	if n > (uint64(len(b))-at)/8 {
		return fmt.Errorf("freelist page %d lists %d pages, more than it holds", id, n)
	}
	for i := range n {
		if free := native.Uint64(b[at+8*i:]); free < 2 || free >= c.m.pgid {
			return fmt.Errorf("freelist page %d lists page %d, outside pages 2 to %d", id, free, c.m.pgid-1)
		}
	}
	return nil
}

// checkBucket checks the bucket whose root is page root or, when root is 0,
// the inline leaf page inline.
func (c *fileCheck) checkBucket(root uint64, inline []byte, depth int) error {
	if depth > maxDepth {
		return errors.New("buckets are nested too deep")
	}
	if root != 0 {
		return c.checkNode(root, nil, nil, depth)
	}
	if len(inline) < pageHeaderSize {
		return errors.New("an inline bucket is shorter than a page header")
	}
	if flags := native.Uint16(inline[8:]); flags != leafPage {
		return fmt.Errorf("an inline bucket has page type %#x, want leaf", flags)
	}
	return c.checkElements(inline, "an inline bucket", nil, nil, depth)
}

// checkNode checks page id, a branch or leaf page of a bucket's B+tree, and
// everything under it. Its keys must be in order, at least lo and below hi
// (nil: no bound), the range its parent gives it.
func (c *fileCheck) checkNode(id uint64, lo, hi []byte, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("page %d: the tree is nested too deep", id)
	}
	b, err := c.page(id, branchPage, leafPage)
	if err != nil {
		return err
	}
	where := fmt.Sprintf("page %d", id)
	if native.Uint16(b[8:]) == leafPage {
		return c.checkElements(b, where, lo, hi, depth)
	}
	n := int(native.Uint16(b[10:]))
	if n == 0 {
		return fmt.Errorf("branch page %d is empty", id)
	}
	if pageHeaderSize+n*elementSize > len(b) {
		return fmt.Errorf("branch page %d has %d elements, more than it holds", id, n)
	}
	keys := make([][]byte, n)
	for i := range n {
		e := pageHeaderSize + i*elementSize
		pos, ksize := uint64(native.Uint32(b[e:])), uint64(native.Uint32(b[e+4:]))
		if uint64(e)+pos+ksize > uint64(len(b)) {
			return fmt.Errorf("branch page %d: key %d runs past the page", id, i)
		}
		keys[i] = b[uint64(e)+pos : uint64(e)+pos+ksize]
		if err := keyInOrder(where, i, keys, lo, hi); err != nil {
			return err
		}
	}
	for i := range n {
		e := pageHeaderSize + i*elementSize
		next := hi
		if i+1 < n {
			next = keys[i+1]
		}
		if err := c.checkNode(native.Uint64(b[e+8:]), keys[i], next, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// keyInOrder checks keys[i] of the page where: above the key before it, at
// least lo, below hi.
func keyInOrder(where string, i int, keys [][]byte, lo, hi []byte) error {
	k := keys[i]
	switch {
	case i > 0 && bytes.Compare(keys[i-1], k) >= 0:
		return fmt.Errorf("%s: key %d is not above the key before it", where, i)
	case i == 0 && lo != nil && bytes.Compare(k, lo) < 0:
		return fmt.Errorf("%s: its first key is below its parent's", where)
	case hi != nil && bytes.Compare(k, hi) >= 0:
		return fmt.Errorf("%s: key %d is not below its parent's next key", where, i)
	}
	return nil
}

// checkElements checks the leaf page b (a whole page, or an inline
// bucket's bytes): every key and value inside it and in order, every
// nested bucket.
func (c *fileCheck) checkElements(b []byte, where string, lo, hi []byte, depth int) error {
	n := int(native.Uint16(b[10:]))
	if pageHeaderSize+n*elementSize > len(b) {
		return fmt.Errorf("%s has %d elements, more than it holds", where, n)
	}
	keys := make([][]byte, n)
	for i := range n {
		e := pageHeaderSize + i*elementSize
		flags := native.Uint32(b[e:])
		pos, ksize, vsize := uint64(native.Uint32(b[e+4:])), uint64(native.Uint32(b[e+8:])), uint64(native.Uint32(b[e+12:]))
		start := uint64(e) + pos + ksize
		if start+vsize > uint64(len(b)) {
			return fmt.Errorf("%s: element %d runs past its page", where, i)
		}
		keys[i] = b[start-ksize : start]
		if err := keyInOrder(where, i, keys, lo, hi); err != nil {
			return err
		}
		if flags&bucketLeafFlag == 0 {
			continue
		}
		v := b[start : start+vsize]
		if len(v) < bucketHeader {
			return fmt.Errorf("%s: element %d is a bucket shorter than a bucket header", where, i)
		}
		if err := c.checkBucket(native.Uint64(v), v[bucketHeader:], depth+1); err != nil {
			return err
		}
	}
	return nil
}
