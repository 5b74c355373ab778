package config

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/wakeonchat/wakeonchat/machines"
)

// The decoder (BurntSushi/toml v1.6.0) matches a key to a field regardless of
// case, stops at its first wrong value, met in Go map order (so which one
// it names changes from run to run), and exports no position for a key.
// MetaData.Undecoded cannot stand in for a strict check: a key differing
// only in case, or any key of [replies] (a map), counts as decoded. So the
// file is decoded one value at a time: its tables are read as
// toml.Primitive values, walked in the file's order (MetaData.Keys) along
// Config's own type, each key matched exactly to a toml tag or a reply key,
// and each value decoded into its field by the decoder (PrimitiveDecode).
// A key's line is the decoder's too: it keeps the position of every key but
// exports it only in the ParseError about a value that fails to decode at
// that key, so a probe that always fails is decoded there.

// decoder decodes a parsed file into a Config and keeps what it met.
type decoder struct {
	src    string
	md     *toml.MetaData
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

func newDecoder(src string, md *toml.MetaData) *decoder {
	d := &decoder{src: src, md: md, order: map[string]int{}, count: map[string]int{}, spots: map[string]spot{}}
	for i, k := range md.Keys() {
		d.count[k.String()]++
		for n := 1; n <= len(k); n++ { // implicit tables ("a" of a.b = 1) are not in Keys
			if _, ok := d.order[k[:n].String()]; !ok {
				d.order[k[:n].String()] = i
			}
		}
	}
	return d
}

// table decodes the entries of a table into v, a struct or a map, in the
// file's order, and returns the first one's key. key is the table's key as
// errors name it ("" for the document), at as the decoder does. An invalid
// v (under a key already reported) decodes nothing and only keeps spots.
func (d *decoder) table(m map[string]toml.Primitive, v reflect.Value, key string, at toml.Key) string {
	names := slices.Sorted(maps.Keys(m))
	slices.SortStableFunc(names, func(a, b string) int {
		return d.order[childKey(at, a).String()] - d.order[childKey(at, b).String()]
	})
	first := ""
	for _, name := range names {
		k := toml.Key{name}.String()
		if key != "" {
			k = key + "." + k
		}
		first = cmp.Or(first, k)
		f := d.entry(v, name, k)
		d.value(m[name], f, k, childKey(at, name))
		if v.IsValid() && v.Kind() == reflect.Map && f.IsValid() {
			v.SetMapIndex(reflect.ValueOf(name).Convert(v.Type().Key()), f)
		}
	}
	return first
}

// entry returns where the value of the entry name of table v goes: the
// field whose toml tag is name, exactly, or for [replies] a new element
// when machines lists the reply, or for another map (a backend's pods) a
// new element. It reports an unknown key.
func (d *decoder) entry(v reflect.Value, name, key string) reflect.Value {
	switch {
	case !v.IsValid():
		return v
	case v.Kind() == reflect.Struct:
		for i := range v.NumField() {
			if tag, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("toml"), ","); tag == name && tag != "-" {
				return v.Field(i)
			}
		}
	case v.Kind() == reflect.Map && v.Type().Key() == reflect.TypeFor[machines.ReplyKey]():
		if slices.Contains(machines.ReplyKeys, machines.ReplyKey(name)) {
			return reflect.New(v.Type().Elem()).Elem()
		}
	case v.Kind() == reflect.Map: // a map of any keys: [[backends]] pods
		return reflect.New(v.Type().Elem()).Elem()
	}
	d.errs = append(d.errs, &Error{Key: key, Err: ErrUnknownKey})
	return reflect.Value{}
}

// value decodes p, the value the file sets at key, into v (see table).
func (d *decoder) value(p toml.Primitive, v reflect.Value, key string, at toml.Key) {
	var raw any
	_ = d.md.PrimitiveDecode(p, &raw) // into an empty interface it cannot fail
	if v.IsValid() && !d.fits(p, raw, v, key) {
		v = reflect.Value{}
	}
	s := spot{p: p, at: at}
	switch raw.(type) {
	case map[string]any:
		var m map[string]toml.Primitive
		_ = d.md.PrimitiveDecode(p, &m)
		if v.IsValid() && v.Kind() == reflect.Map && v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
		s.first = d.table(m, v, key, at)
	case []any, []map[string]any:
		var elems []toml.Primitive
		_ = d.md.PrimitiveDecode(p, &elems)
		if v.IsValid() && v.Len() != len(elems) { // [[providers]] arrive sized, with their defaults
			v.Set(reflect.MakeSlice(v.Type(), len(elems), len(elems)))
		}
		for i, e := range elems {
			k := fmt.Sprintf("%s[%d]", key, i)
			s.first = cmp.Or(s.first, k)
			var ev reflect.Value
			if v.IsValid() {
				ev = v.Index(i)
			}
			d.value(e, ev, k, at)
		}
	}
	d.spots[key] = s
}

var unmarshaler = reflect.TypeFor[toml.Unmarshaler]()

// fits says whether raw, p decoded as plain TOML, has the shape v takes (a
// table, an array), and decodes p into v when v takes a single value. It
// reports a value that does not fit.
func (d *decoder) fits(p toml.Primitive, raw any, v reflect.Value, key string) bool {
	var want string
	switch t := v.Type(); {
	case reflect.PointerTo(t).Implements(unmarshaler): // Duration: it says what is wrong
		return d.leaf(p, raw, v, key)
	case t.Kind() == reflect.Struct, t.Kind() == reflect.Map:
		if _, ok := raw.(map[string]any); ok {
			return true
		}
		want = "a table"
	case t.Kind() == reflect.Slice:
		switch raw.(type) {
		case []any, []map[string]any:
			return true
		}
		want = "an array"
		if t.Elem().Kind() == reflect.Struct {
			want = "an array of tables"
		}
	default:
		return d.leaf(p, raw, v, key)
	}
	d.errs = append(d.errs, problem(key, "want %s, got %s", want, describe(raw)))
	return false
}

// leaf decodes p into v, a single value, and reports what the decoder
// rejects.
func (d *decoder) leaf(p toml.Primitive, raw any, v reflect.Value, key string) bool {
	err := d.md.PrimitiveDecode(p, v.Addr().Interface())
	var pe toml.ParseError
	switch {
	case err == nil:
		return true
	case errors.As(err, &pe): // rejected by one of this package's types, e.g. Duration
		d.errs = append(d.errs, &Error{Key: key, Err: errors.New(pe.Message)})
	default: // the decoder's own message names Go types
		want := "a string" // Config's other single values
		if v.CanInt() {
			want = "an integer"
		}
		d.errs = append(d.errs, problem(key, "want %s, got %s", want, describe(raw)))
	}
	return false
}

// maxLineLookups bounds the lines one parse looks up (the decoder splits the
// whole file into lines for each); later problems are reported without one.
const maxLineLookups = 100

// lineProbe fails to decode anything, so that the decoder's error carries
// the position of the key it is decoded at.
type lineProbe struct{}

func (lineProbe) UnmarshalTOML(any) error { return errors.New("line probe") }

// addLines sets the Line of each problem whose key the file sets.
func (d *decoder) addLines(errs []*Error) {
	for _, e := range errs {
		e.Line = d.line(e.Key)
	}
}

// line returns the line at which the file sets key (as errors name it), or
// 0 when the decoder does not say. It keeps one position per key for all the
// tables of an array, so a key set in more than one of them gets no line; an
// implicit table has none, and gets the line of its first key.
func (d *decoder) line(key string) int {
	s, ok := d.spots[key]
	if !ok {
		return 0
	}
	if d.count[s.at.String()] == 1 && d.probes < maxLineLookups {
		d.probes++
		var pe toml.ParseError
		if errors.As(d.md.PrimitiveDecode(s.p, lineProbe{}), &pe) && pe.Position.Line > 0 {
			line, _ := position(d.src, pe.Position)
			return line
		}
	}
	if s.first == "" {
		return 0
	}
	return d.line(s.first)
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
