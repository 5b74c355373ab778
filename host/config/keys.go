package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/BurntSushi/toml"
)

// The decoder matches keys regardless of case, stops at its first wrong
// value, met in no fixed order (it walks Go maps), and its MetaData.Undecoded
// names neither a key differing only in case nor an unknown reply (a map
// takes any key). So a checker walks the file, in the file's order, against
// DefaultConfig as the decoder itself encodes it: a key not there, spelled
// exactly, is unknown; and when the file as a whole did not decode, each
// value is decoded alone into a Config, so that every value the decoder
// rejects is reported under its own key. Lines come from the decoder too: it
// keeps the position of every key but exports it only in the error about a
// value that fails to decode, so a probe that always fails is decoded there.

// defaults is DefaultConfig encoded by the decoder's own encoder and decoded
// again into plain TOML values: its keys are exactly the keys wake.toml may
// set, and its values show the type each one takes.
var defaults = sync.OnceValue(func() map[string]any {
	var b bytes.Buffer
	var m map[string]any
	err := toml.NewEncoder(&b).Encode(DefaultConfig())
	if err == nil {
		_, err = toml.Decode(b.String(), &m)
	}
	if err != nil {
		panic("config: DefaultConfig does not round-trip through TOML: " + err.Error())
	}
	return m
})

type checker struct {
	src    string
	md     *toml.MetaData
	decode bool            // decode each value alone: the file as a whole did not decode
	order  map[string]int  // key, as the decoder names it -> index of its first appearance
	count  map[string]int  // key, as the decoder names it -> how many times the file sets it
	spots  map[string]spot // key, as errors name it -> where the file sets it
	probes int
	errs   []*Error
}

// spot is where the file sets a key: its value and its name in the decoder
// (no indexes); first is the key of its first entry, for a table or array.
type spot struct {
	p     toml.Primitive
	at    toml.Key
	first string
}

func newChecker(src string, md *toml.MetaData, decode bool) *checker {
	c := &checker{src: src, md: md, decode: decode, order: map[string]int{}, count: map[string]int{}, spots: map[string]spot{}}
	for i, k := range md.Keys() {
		c.count[k.String()]++
		for n := 1; n <= len(k); n++ { // implicit tables ("a" of a.b = 1) are not in Keys
			if _, ok := c.order[k[:n].String()]; !ok {
				c.order[k[:n].String()] = i
			}
		}
	}
	return c
}

// table checks the entries of a table, in the file's order, and returns the
// first one's key. def is the table's default (nil where there is none),
// display is "" for the document, and wrap places a value at the table in an
// otherwise empty document; see node for the rest.
func (c *checker) table(m map[string]toml.Primitive, def map[string]any, display string, at toml.Key, wrap func(any) map[string]any, check bool) string {
	names := slices.Collect(maps.Keys(m))
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(c.order[childKey(at, a).String()]-c.order[childKey(at, b).String()], strings.Compare(a, b))
	})
	keys := make([]string, len(names))
	for i, name := range names {
		keys[i] = toml.Key{name}.String()
		if display != "" {
			keys[i] = display + "." + keys[i]
		}
		d, known := def[name]
		c.node(m[name], d, known, keys[i], childKey(at, name), func(v any) map[string]any { return wrap(map[string]any{name: v}) }, check)
	}
	return cmp.Or(keys...)
}

// node checks the value p the file sets at a key: display is the key as
// errors name it ("providers[1].pod"), at as the decoder does; def is the
// key's default and known whether there is one. Under a key already
// reported, check is false and only the spots are kept.
func (c *checker) node(p toml.Primitive, def any, known bool, display string, at toml.Key, wrap func(any) map[string]any, check bool) {
	var v any
	_ = c.md.PrimitiveDecode(p, &v) // into an empty interface it cannot fail
	var bad error
	switch {
	case check && !known:
		bad = ErrUnknownKey
	case check && c.decode:
		bad = decodeAlone(wrap(emptied(v)), v, def)
	}
	check = check && bad == nil
	s := spot{p: p, at: at}
	switch v.(type) {
	case map[string]any:
		var m map[string]toml.Primitive
		_ = c.md.PrimitiveDecode(p, &m)
		d, _ := def.(map[string]any)
		s.first = c.table(m, d, display, at, wrap, check)
	case []any, []map[string]any:
		var elems []toml.Primitive
		_ = c.md.PrimitiveDecode(p, &elems)
		for i, e := range elems {
			key := fmt.Sprintf("%s[%d]", display, i)
			s.first = cmp.Or(s.first, key)
			c.node(e, firstElem(def), known, key, at, func(v any) map[string]any { return wrap([]any{v}) }, check)
		}
	}
	c.spots[display] = s
	if bad != nil {
		c.errs = append(c.errs, &Error{Key: display, Err: bad})
	}
}

// decodeAlone decodes doc, a document holding only the value v (a table or
// array emptied of its entries), into a Config and says what the decoder
// rejects; def is v's default, for naming the type it should have.
func decodeAlone(doc map[string]any, v, def any) error {
	var b bytes.Buffer
	if err := toml.NewEncoder(&b).Encode(doc); err != nil {
		return err
	}
	var c Config
	_, err := toml.Decode(b.String(), &c)
	var pe toml.ParseError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &pe): // rejected by one of this package's types, e.g. Duration
		return errors.New(pe.Message)
	}
	return fmt.Errorf("want %s, got %s", describe(def), describe(v))
}

// maxLineLookups bounds the lines one Parse looks up (the decoder splits the
// whole file into lines for each); later problems are reported without one.
const maxLineLookups = 100

// lineProbe fails to decode anything, so that the decoder's error carries
// the position of the key it is decoded at.
type lineProbe struct{}

func (lineProbe) UnmarshalTOML(any) error { return errors.New("line probe") }

// addLines sets the Line of each problem whose key the file sets.
func (c *checker) addLines(errs []*Error) {
	for _, e := range errs {
		e.Line = c.line(e.Key)
	}
}

// line returns the line at which the file sets key (as errors name it), or
// 0 when the decoder does not say. It keeps one position per key for all the
// tables of an array, so a key set in more than one of them gets no line; an
// implicit table has none, and gets the line of its first key.
func (c *checker) line(key string) int {
	s, ok := c.spots[key]
	if !ok {
		return 0
	}
	if c.count[s.at.String()] == 1 && c.probes < maxLineLookups {
		c.probes++
		var pe toml.ParseError
		if errors.As(c.md.PrimitiveDecode(s.p, lineProbe{}), &pe) && pe.Position.Line > 0 {
			line, _ := position(c.src, pe.Position)
			return line
		}
	}
	if s.first == "" {
		return 0
	}
	return c.line(s.first)
}

// emptied returns v, or an empty table or array for a table or array.
func emptied(v any) any {
	switch v.(type) {
	case map[string]any:
		return map[string]any{}
	case []any, []map[string]any:
		return []any{}
	}
	return v
}

// firstElem returns the first element of an array, nil for anything else.
func firstElem(v any) any {
	switch a := v.(type) {
	case []any:
		if len(a) > 0 {
			return a[0]
		}
	case []map[string]any:
		if len(a) > 0 {
			return a[0]
		}
	}
	return nil
}

// describe names the TOML type of a decoded value.
func describe(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case time.Time:
		return "a date-time"
	case map[string]any:
		return "a table"
	case []map[string]any:
		return "an array of tables"
	case []any:
		return "an array"
	}
	return "another type"
}

// childKey returns key.name in a new slice, never sharing key's array.
func childKey(key toml.Key, name string) toml.Key {
	return append(slices.Clip(key), name)
}
