package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrUnknownKey is the Err of an [*Error] about a key the host does not know.
var ErrUnknownKey = errors.New("unknown key")

// Error is one problem with a configuration. [Load] and
// [Config.Validate] return them joined with [errors.Join]; use [errors.As]
// or walk the join to reach each one.
type Error struct {
	File string // the file the problem is in; set by Load, "" from Validate
	Line int    // 1-based line of the key, or of a syntax error; 0 when not known
	Col  int    // 1-based column of a syntax error; 0 otherwise
	Key  string // the key, e.g. "timings.wake_window" or "providers[1].pod"; "" for a syntax error
	Err  error  // what is wrong
}

// Error reads like a compiler message, e.g.
//
//	/etc/wake/wake.toml:7: unknown key "timings.wake_windw"
//	line 7: timings.wake_window: invalid duration "15x" ...
//	timings.wake_window: must be positive
func (e *Error) Error() string {
	var b strings.Builder
	switch {
	case e.File != "":
		b.WriteString(e.File)
		if e.Line > 0 {
			b.WriteString(":" + strconv.Itoa(e.Line))
			if e.Col > 0 {
				b.WriteString(":" + strconv.Itoa(e.Col))
			}
		}
		b.WriteString(": ")
	case e.Line > 0:
		b.WriteString("line " + strconv.Itoa(e.Line))
		if e.Col > 0 {
			b.WriteString(", column " + strconv.Itoa(e.Col))
		}
		b.WriteString(": ")
	}
	switch {
	case errors.Is(e.Err, ErrUnknownKey):
		b.WriteString("unknown key " + strconv.Quote(e.Key))
	case e.Key != "":
		b.WriteString(e.Key + ": " + e.Err.Error())
	default:
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// join returns the problems as one error, nil when there are none.
func join(errs []*Error) error {
	if len(errs) == 0 {
		return nil
	}
	all := make([]error, len(errs))
	for i, e := range errs {
		all[i] = e
	}
	return errors.Join(all...)
}

// unjoin returns the errors joined in err, or err alone.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err == nil {
		return nil
	}
	return []error{err}
}

// problem is shorthand for an *Error about key.
func problem(key, format string, args ...any) *Error {
	return &Error{Key: key, Err: fmt.Errorf(format, args...)}
}
