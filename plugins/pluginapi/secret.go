package pluginapi

import "log/slog"

// Redacted replaces a secret in whatever is reported.
const Redacted = "[redacted]"

// Secret is a credential a plugin holds: a token, an API key. It formats
// as Redacted in every fmt verb and log handler, so a Config holding one
// can be printed or logged safely; string(s) is the value.
type Secret string

// String returns Redacted.
func (Secret) String() string { return Redacted }

// GoString returns Redacted, for %#v.
func (Secret) GoString() string { return Redacted }

// LogValue returns Redacted, for log/slog.
func (Secret) LogValue() slog.Value { return slog.StringValue(Redacted) }
