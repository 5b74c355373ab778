package openai

import "log/slog"

// APIKey is a secret: the model API key. It formats as "[redacted]" in
// every fmt verb and log handler.
type APIKey string

const redacted = "[redacted]"

// String returns "[redacted]".
func (APIKey) String() string { return redacted }

// GoString returns "[redacted]", for %#v.
func (APIKey) GoString() string { return redacted }

// LogValue returns "[redacted]", for log/slog.
func (APIKey) LogValue() slog.Value { return slog.StringValue(redacted) }
