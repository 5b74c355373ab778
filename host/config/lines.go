package config

import (
	"errors"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// The decoder records where every key is set but does not export it; it
// does put it in the ParseError of a value that fails to decode. keyLine
// uses that: it decodes the file once more into a struct built for the one
// key, whose field for that key always fails, and reads the position from
// the error (counting the line from the byte offset, so a multi-line string
// gets the line it starts on). Two limits follow from the decoder: a key
// under an array of tables is recorded once for all tables (the last), so
// such a key gets a line only when one table sets it; and implicit tables
// ("a" in a.b = 1) have no position of their own, so they get the line of
// the first key under them.

// maxLineLookups bounds the extra decodes one Parse spends on lines; later
// problems are reported without one.
const maxLineLookups = 20

// addLines sets the Line of each problem whose key the file sets.
func addLines(src string, md toml.MetaData, errs []*Error) {
	keys := md.Keys()
	count := make(map[string]int, len(keys))
	for _, k := range keys {
		count[k.String()]++
	}
	lookups := 0
	for _, e := range errs {
		if e.Line != 0 || e.Key == "" || lookups == maxLineLookups {
			continue
		}
		at := e.at
		if at == nil {
			at = schemaKey(e.Key)
		}
		target := at
		if count[at.String()] == 0 {
			target = nil
			for _, k := range keys {
				if hasPrefix(k, at) {
					target = k
					break
				}
			}
		}
		if target == nil || count[target.String()] != 1 {
			continue
		}
		lookups++
		e.Line = keyLine(src, target, keys)
	}
}

var indexPattern = regexp.MustCompile(`\[\d+\]`)

// schemaKey turns a key as Validate names it ("providers[1].pod") into the
// decoder's form (providers, pod). Validate names only Config's own keys,
// which need no quoting.
func schemaKey(key string) toml.Key {
	return toml.Key(strings.Split(indexPattern.ReplaceAllString(key, ""), "."))
}

func hasPrefix(k, prefix toml.Key) bool {
	if len(k) < len(prefix) {
		return false
	}
	for i := range prefix {
		if k[i] != prefix[i] {
			return false
		}
	}
	return true
}

// lineProbe fails to decode whatever it is given, so the decoder reports
// the position of the key it sits at.
type lineProbe struct{}

var errLineProbe = errors.New("config: line probe")

func (*lineProbe) UnmarshalTOML(any) error { return errLineProbe }

// keyLine returns the line at which src sets key, or 0 when the decoder
// does not say. keys are all the keys in src.
func keyLine(src string, key toml.Key, keys []toml.Key) int {
	t := probeType(key, 0, configType, keys)
	if t == nil {
		return 0
	}
	_, err := toml.Decode(src, reflect.New(t).Interface())
	var pe toml.ParseError
	if errors.As(err, &pe) && pe.Message == errLineProbe.Error() && pe.LastKey == key.String() {
		line, _ := position(src, pe.Position)
		return line
	}
	return 0
}

var (
	probeFieldType     = reflect.TypeFor[lineProbe]()
	primitiveFieldType = reflect.TypeFor[toml.Primitive]()
)

// probeType builds the struct for key[depth:] at a level whose Config type
// is schema (nil where Config has no such table): one field on the path to
// the key, whose last field is a lineProbe, and a toml.Primitive for every
// other name the file uses at that level, so that the decoder, which falls
// back to a case-insensitive match, matches each of them exactly instead of
// the probe. It returns nil for a name a struct tag cannot carry.
func probeType(key toml.Key, depth int, schema reflect.Type, keys []toml.Key) reflect.Type {
	name := key[depth]
	if !taggable(name) {
		return nil
	}
	ft := probeFieldType
	if depth < len(key)-1 {
		var child reflect.Type
		slice := false
		if schema != nil {
			if f, ok := fieldByTag(schema, name); ok {
				child = f.Type
				if child.Kind() == reflect.Slice {
					slice, child = true, child.Elem()
				}
				if child.Kind() != reflect.Struct || child == durationType {
					child = nil
				}
			}
		}
		ft = probeType(key, depth+1, child, keys)
		if ft == nil {
			return nil
		}
		if slice {
			ft = reflect.SliceOf(ft)
		}
	}
	fields := []reflect.StructField{{Name: "F0", Type: ft, Tag: tomlTag(name)}}
	seen := map[string]bool{name: true}
	for _, k := range keys {
		if len(k) <= depth || !hasPrefix(k, key[:depth]) || seen[k[depth]] || !taggable(k[depth]) {
			continue
		}
		seen[k[depth]] = true
		fields = append(fields, reflect.StructField{
			Name: "F" + strconv.Itoa(len(fields)),
			Type: primitiveFieldType,
			Tag:  tomlTag(k[depth]),
		})
	}
	return reflect.StructOf(fields)
}

// taggable reports whether name survives a toml struct tag: the decoder
// splits tags at commas, skips "-" and replaces "" with the field's name.
func taggable(name string) bool {
	return name != "" && name != "-" && !strings.Contains(name, ",")
}

func tomlTag(name string) reflect.StructTag {
	return reflect.StructTag(`toml:` + strconv.Quote(name))
}
