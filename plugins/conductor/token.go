package conductor

import "log/slog"

// Token is a secret: the wake-only operator token (RIG_WAKE_TOKEN). It
// formats as "[redacted]" in every fmt verb and log handler, so a Config
// can be printed or logged safely.
type Token string

const redacted = "[redacted]"

// String returns "[redacted]".
func (Token) String() string { return redacted }

// GoString returns "[redacted]", for %#v.
func (Token) GoString() string { return redacted }

// LogValue returns "[redacted]", for log/slog.
func (Token) LogValue() slog.Value { return slog.StringValue(redacted) }
