package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

var (
	configType   = reflect.TypeFor[Config]()
	durationType = reflect.TypeFor[Duration]()
)

// checkShape compares the untyped document raw with Config's toml tags and
// reports, in the file's order, every key Config does not have (matched
// exactly, case included; only the outermost unknown key of a table), every
// value of the wrong type and every malformed duration. md orders the keys.
func checkShape(raw map[string]any, md toml.MetaData) []*Error {
	s := shape{order: map[string]int{}}
	for i, k := range md.Keys() {
		for n := 1; n <= len(k); n++ { // implicit tables ("a" of a.b = 1) are not in Keys
			if _, ok := s.order[k[:n].String()]; !ok {
				s.order[k[:n].String()] = i
			}
		}
	}
	s.table(raw, configType, "", nil)
	return s.errs
}

type shape struct {
	order map[string]int // key -> index of its first appearance in the file
	errs  []*Error
}

// table checks the table m against the struct type t. display is its key as
// errors show it ("providers[1]"), at as the decoder names it ("providers").
func (s *shape) table(m map[string]any, t reflect.Type, display string, at toml.Key) {
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int {
		oa, ob := s.order[childKey(at, a).String()], s.order[childKey(at, b).String()]
		if oa != ob {
			return oa - ob
		}
		return strings.Compare(a, b)
	})
	for _, name := range names {
		key := childKey(at, name)
		d := toml.Key{name}.String()
		if display != "" {
			d = display + "." + d
		}
		f, ok := fieldByTag(t, name)
		if !ok {
			s.errs = append(s.errs, &Error{Key: d, Err: ErrUnknownKey, at: key})
			continue
		}
		s.value(m[name], f.Type, d, key)
	}
}

func (s *shape) value(v any, t reflect.Type, display string, at toml.Key) {
	bad := func(want string) {
		s.errs = append(s.errs, &Error{Key: display, at: at, Err: fmt.Errorf("want %s, got %s", want, describe(v))})
	}
	switch {
	case t == durationType:
		str, ok := v.(string)
		if !ok {
			bad(`a duration string such as "15m"`)
			return
		}
		var d Duration
		if err := d.UnmarshalText([]byte(str)); err != nil {
			s.errs = append(s.errs, &Error{Key: display, at: at, Err: err})
		}
	case t.Kind() == reflect.String:
		if _, ok := v.(string); !ok {
			bad("a string")
		}
	case t.Kind() == reflect.Int || t.Kind() == reflect.Int64:
		if _, ok := v.(int64); !ok {
			bad("an integer")
		}
	case t.Kind() == reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			bad("a table")
			return
		}
		s.table(m, t, display, at)
	case t.Kind() == reflect.Slice:
		elems, ok := asSlice(v)
		if !ok {
			if t.Elem().Kind() == reflect.Struct {
				bad("an array of tables")
			} else {
				bad("an array")
			}
			return
		}
		for i, e := range elems {
			s.value(e, t.Elem(), fmt.Sprintf("%s[%d]", display, i), at)
		}
	default: // a Config field of a kind added without teaching this switch
		s.errs = append(s.errs, &Error{Key: display, at: at, Err: fmt.Errorf("config has no TOML form for %v", t)})
	}
}

// fieldByTag returns t's field whose toml tag names name exactly.
func fieldByTag(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		if f.IsExported() && tag != "" && tag != "-" && tag == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// asSlice returns the elements of a TOML array: []any for an inline array,
// []map[string]any for an array of tables.
func asSlice(v any) ([]any, bool) {
	switch a := v.(type) {
	case []any:
		return a, true
	case []map[string]any:
		out := make([]any, len(a))
		for i, m := range a {
			out[i] = m
		}
		return out, true
	}
	return nil, false
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
	return fmt.Sprintf("a %T", v)
}

// childKey returns key.name in a new slice, never sharing key's array.
func childKey(key toml.Key, name string) toml.Key {
	return append(slices.Clip(key), name)
}
