package config

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

// Load reads the wake.toml at path, decodes it strictly over DefaultConfig,
// resolves server.data_dir and plugins.dir against the file's directory and
// validates the result. On success Path is the file's absolute path. On
// failure the Config is the zero value and the error either says the file
// could not be read (naming it) or joins one *Error per problem, each with
// File set.
func Load(path string) (Config, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return Config{}, fmt.Errorf("config %q: %w", path, err)
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		return Config{}, fmt.Errorf("read config: %w", err)
	}
	c, errs := parse(data, filepath.Dir(abs))
	if len(errs) > 0 {
		for _, e := range errs {
			e.File = abs
		}
		return Config{}, join(errs)
	}
	c.Path = abs
	return c, nil
}

func parse(data []byte, dir string) (Config, []*Error) {
	src := string(data)
	var top map[string]toml.Primitive
	md, err := toml.Decode(src, &top)
	if err != nil {
		return Config{}, []*Error{syntaxError(src, err)}
	}

	// Decode over the defaults, key by key in the file's order, reporting
	// every unknown key and every value the decoder rejects. Tables merge
	// key by key and [replies] entry by entry, but the file's [[providers]]
	// replace the default provider: each is decoded over a Provider holding
	// only the defaults of plugin and path.
	c := DefaultConfig()
	if p, ok := top["providers"]; ok {
		var tables []toml.Primitive
		_ = md.PrimitiveDecode(p, &tables) // not an array: reported below
		c.Providers = slices.Repeat([]Provider{{Plugin: DefaultProviderPlugin, Path: DefaultProviderPath}}, len(tables))
	}
	// Each [[backends]] table is decoded over the defaults of its kind, and
	// may set only the keys of its kind.
	var backends []map[string]any
	if p, ok := top["backends"]; ok {
		_ = md.PrimitiveDecode(p, &backends) // not an array of tables: reported below
		c.Backends = make([]Backend, len(backends))
		for i, b := range backends {
			kind, _ := b["kind"].(string)
			c.Backends[i] = DefaultBackend(kind)
		}
	}
	d := newDecoder(src, &md)
	d.table(top, reflect.ValueOf(&c).Elem(), "", nil)
	for i, b := range backends {
		for _, key := range slices.Sorted(maps.Keys(b)) {
			if e := kindProblem(fmt.Sprintf("backends[%d]", i), key, c.Backends[i].Kind); e != nil {
				d.errs = append(d.errs, e)
			}
		}
	}
	if len(d.errs) > 0 {
		d.addLines(d.errs)
		return Config{}, d.errs
	}

	// Relative directories are relative to the file.
	if dir, err = filepath.Abs(dir); err != nil {
		return Config{}, []*Error{{Err: fmt.Errorf("config directory: %w", err)}}
	}
	c.Server.DataDir = resolve(dir, c.Server.DataDir)
	c.Plugins.Dir = resolve(dir, c.Plugins.Dir)

	if errs := c.validate(); len(errs) > 0 {
		d.addLines(errs)
		return Config{}, errs
	}
	return c, nil
}

// syntaxError turns the decoder's error about malformed TOML into an *Error
// with its line and column.
func syntaxError(src string, err error) *Error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		line, col := position(src, pe.Position)
		return &Error{Line: line, Col: col, Err: errors.New("invalid TOML: " + pe.Message)}
	}
	return &Error{Err: err}
}

// position returns the 1-based line and byte column of p. It counts them
// from p.Start, the byte offset, itself: the decoder's Line is the lexer's
// line when the item ended (the last line of a multi-line string), and its
// Col is one past the end of the previous line for an item that starts a
// line. ParseError.Line is not used at all: it is deprecated and, for some
// errors, holds a length.
func position(src string, p toml.Position) (line, col int) {
	if p.Start < 0 || p.Start > len(src) {
		return p.Line, p.Col
	}
	before := src[:p.Start]
	return 1 + strings.Count(before, "\n"), p.Start - strings.LastIndexByte(before, '\n')
}

// resolve makes a relative, non-empty p relative to dir. An empty p is left
// for Validate to report.
func resolve(dir, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}
