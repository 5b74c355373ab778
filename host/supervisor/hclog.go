package supervisor

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// LevelTrace is the slog level hclog's Trace lines arrive at.
const LevelTrace = slog.LevelDebug - 4

// hclogAdapter is the hclog.Logger go-plugin writes to: the plugin's
// stderr lines (parsed from hclog JSON, at their own level) and
// go-plugin's own lines. It forwards each to a slog.Logger, with every
// secret scrubbed from the message and from string attribute values.
type hclogAdapter struct {
	logger  *slog.Logger
	name    string
	implied []any
	scrub   func(string) string
}

var _ hclog.Logger = (*hclogAdapter)(nil)

func newHclogAdapter(logger *slog.Logger, scrub func(string) string) *hclogAdapter {
	return &hclogAdapter{logger: logger, scrub: scrub}
}

func toSlogLevel(l hclog.Level) (slog.Level, bool) {
	switch l {
	case hclog.Trace:
		return LevelTrace, true
	case hclog.Debug:
		return slog.LevelDebug, true
	case hclog.Info, hclog.NoLevel:
		return slog.LevelInfo, true
	case hclog.Warn:
		return slog.LevelWarn, true
	case hclog.Error:
		return slog.LevelError, true
	}
	return 0, false // hclog.Off
}

func (a *hclogAdapter) Log(level hclog.Level, msg string, args ...any) {
	sl, ok := toSlogLevel(level)
	if !ok {
		return
	}
	ctx := context.Background()
	if !a.logger.Enabled(ctx, sl) {
		return
	}
	attrs := make([]slog.Attr, 0, 1+(len(a.implied)+len(args))/2)
	if a.name != "" {
		attrs = append(attrs, slog.String("module", a.name))
	}
	attrs = a.appendAttrs(attrs, a.implied)
	attrs = a.appendAttrs(attrs, args)
	a.logger.LogAttrs(ctx, sl, a.scrub(msg), attrs...)
}

func (a *hclogAdapter) appendAttrs(attrs []slog.Attr, kvs []any) []slog.Attr {
	for i := 0; i < len(kvs); i += 2 {
		if i+1 == len(kvs) {
			attrs = append(attrs, slog.Any("EXTRA_VALUE_AT_END", a.scrubValue(kvs[i])))
			break
		}
		key, ok := kvs[i].(string)
		if !ok {
			key = fmt.Sprint(kvs[i])
		}
		if key == "plugin" {
			// "plugin" names the plugin (Spec.Name) on every record;
			// go-plugin's own "plugin" attribute is its path.
			key = "plugin_attr"
		}
		attrs = append(attrs, slog.Any(a.scrub(key), a.scrubValue(kvs[i+1])))
	}
	return attrs
}

// scrubValue scrubs strings, errors, Stringers and the strings inside the
// slices and maps a JSON log line decodes to. Numbers and booleans pass.
func (a *hclogAdapter) scrubValue(v any) any {
	switch v := v.(type) {
	case string:
		return a.scrub(v)
	case error:
		return a.scrub(v.Error())
	case fmt.Stringer:
		return a.scrub(v.String())
	case []string:
		out := make([]string, len(v))
		for i, s := range v {
			out[i] = a.scrub(s)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = a.scrubValue(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[a.scrub(k)] = a.scrubValue(e)
		}
		return out
	case []byte:
		return a.scrub(string(v))
	}
	return v
}

func (a *hclogAdapter) Trace(msg string, args ...any) { a.Log(hclog.Trace, msg, args...) }
func (a *hclogAdapter) Debug(msg string, args ...any) { a.Log(hclog.Debug, msg, args...) }
func (a *hclogAdapter) Info(msg string, args ...any)  { a.Log(hclog.Info, msg, args...) }
func (a *hclogAdapter) Warn(msg string, args ...any)  { a.Log(hclog.Warn, msg, args...) }
func (a *hclogAdapter) Error(msg string, args ...any) { a.Log(hclog.Error, msg, args...) }

func (a *hclogAdapter) enabled(l hclog.Level) bool {
	sl, ok := toSlogLevel(l)
	return ok && a.logger.Enabled(context.Background(), sl)
}

func (a *hclogAdapter) IsTrace() bool { return a.enabled(hclog.Trace) }
func (a *hclogAdapter) IsDebug() bool { return a.enabled(hclog.Debug) }
func (a *hclogAdapter) IsInfo() bool  { return a.enabled(hclog.Info) }
func (a *hclogAdapter) IsWarn() bool  { return a.enabled(hclog.Warn) }
func (a *hclogAdapter) IsError() bool { return a.enabled(hclog.Error) }

func (a *hclogAdapter) ImpliedArgs() []any { return a.implied }

func (a *hclogAdapter) With(args ...any) hclog.Logger {
	b := *a
	b.implied = append(append([]any(nil), a.implied...), args...)
	return &b
}

func (a *hclogAdapter) Name() string { return a.name }

func (a *hclogAdapter) Named(name string) hclog.Logger {
	b := *a
	if b.name != "" {
		name = b.name + "." + name
	}
	b.name = name
	return &b
}

func (a *hclogAdapter) ResetNamed(name string) hclog.Logger {
	b := *a
	b.name = name
	return &b
}

// SetLevel does nothing: the slog handler decides what is logged.
func (a *hclogAdapter) SetLevel(hclog.Level) {}

// GetLevel is the lowest level the slog handler takes. go-plugin uses it
// to skip parsing lines that would be dropped anyway.
func (a *hclogAdapter) GetLevel() hclog.Level {
	for _, l := range []hclog.Level{hclog.Trace, hclog.Debug, hclog.Info, hclog.Warn, hclog.Error} {
		if a.enabled(l) {
			return l
		}
	}
	return hclog.Off
}

func (a *hclogAdapter) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(a.StandardWriter(opts), "", 0)
}

// StandardWriter returns a writer that logs each line written to it, at
// Info or at opts.ForceLevel.
func (a *hclogAdapter) StandardWriter(opts *hclog.StandardLoggerOptions) io.Writer {
	level := hclog.Info
	if opts != nil && opts.ForceLevel != hclog.NoLevel {
		level = opts.ForceLevel
	}
	return &lineWriter{log: a, level: level}
}

// lineWriter logs every non-empty line of each Write.
type lineWriter struct {
	log   *hclogAdapter
	level hclog.Level
	args  []any
}

func (w *lineWriter) Write(p []byte) (int, error) {
	for _, line := range bytes.Split(p, []byte("\n")) {
		if s := strings.TrimRight(string(line), "\r"); strings.TrimSpace(s) != "" {
			w.log.Log(w.level, s, w.args...)
		}
	}
	return len(p), nil
}
