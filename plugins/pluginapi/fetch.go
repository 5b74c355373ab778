package pluginapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"
)

// Answer is a backend's HTTP answer, as Fetch read it.
type Answer struct {
	Status int         // the HTTP status; 0 when no answer came
	Header http.Header // the answer's header; nil when no answer came
	// Body is the answer's body, at most the maxBody Fetch was given. With a
	// *FetchError it is what was read: the part that arrived before the
	// failure, or the first maxBody bytes of a body too large.
	Body []byte
}

// FetchError is a Fetch that got no complete answer. Exactly one of
// Canceled, TimedOut and TooLarge is true, or none, and then Class says how
// the transport failed.
type FetchError struct {
	// Status is the answer's HTTP status when its head arrived and its body
	// then failed or was too large; 0 when no answer came.
	Status int
	// Canceled is true when the caller's context was canceled (not when its
	// deadline passed: that is TimedOut).
	Canceled bool
	// TimedOut is true when the cap ran out: Fetch's limit, or the
	// caller's deadline when that came sooner.
	TimedOut bool
	// Timeout is the cap the call ran with.
	Timeout time.Duration
	// TooLarge is true when the body was longer than Max.
	TooLarge bool
	// Max is the most of the body Fetch was to read.
	Max int64
	// Class is ErrorClass of the transport's error, when that is what
	// failed: "ECONNREFUSED", "ECONNRESET", "EOF", ...
	Class string
}

// Error says what failed in the words of a completion's or a probe's
// failure (see CompletionError and ProbeResult): "canceled", "timed out
// after 3s", "answer larger than 1 MiB", "no response: ECONNREFUSED" (no
// answer) or "response body failed: EOF" (the body of an answer). It never
// carries a URL or a secret.
func (e *FetchError) Error() string {
	switch {
	case e.Canceled:
		return "canceled"
	case e.TimedOut:
		return timedOut(e.Timeout)
	case e.TooLarge:
		return "answer larger than " + size(e.Max)
	case e.Status == 0:
		return "no response: " + e.Class
	}
	return "response body failed: " + e.Class
}

// LookupError is e as the *LookupError of a GetPod, in the words every
// bundled GPU plugin's lookups use, each beginning with backend (the
// backend's name in lower case, such as "conductor"): "conductor lookup
// canceled", "conductor timed out after 3s", "conductor answered more than
// 1 MiB", "conductor unreachable: ECONNREFUSED" (no answer) or "conductor
// answer unreadable: EOF" (the body of an answer), with e's Status.
func (e *FetchError) LookupError(backend string) *LookupError {
	var msg string
	switch {
	case e.Canceled:
		msg = backend + " lookup canceled"
	case e.TimedOut:
		msg = backend + " " + timedOut(e.Timeout)
	case e.TooLarge:
		msg = backend + " answered more than " + size(e.Max)
	case e.Status == 0:
		msg = backend + " unreachable: " + e.Class
	default:
		msg = backend + " answer unreadable: " + e.Class
	}
	return &LookupError{Status: e.Status, Message: msg}
}

// Fetch sends req once with client and reads the answer: its status, its
// header and at most maxBody bytes of its body, which it closes. It is one
// request to a plugin's backend, such as a GPU plugin's GetPod: it never
// retries, and it follows a redirect only when client does
// (NewHTTPClient's does not).
//
// The call honours req's context and caps it, reading the body included,
// at limit, or at the context's deadline when that comes sooner. Any
// answer is an Answer, whatever its status: what a status means is the
// caller's to say. A call that got no complete answer is a *FetchError:
// the caller canceled, the cap ran out, the transport failed before an
// answer (Status 0) or while the body was read (the answer's Status), or
// the body was longer than maxBody (TooLarge). The Answer then holds
// what arrived. A negative maxBody is 0.
func Fetch(client *http.Client, req *http.Request, limit time.Duration, maxBody int64) (Answer, error) {
	maxBody = max(maxBody, 0)
	parent := req.Context()
	timeout := CapTimeout(parent, limit)
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	fail := func(status int, err error) *FetchError {
		e := &FetchError{Status: status, Timeout: timeout, Max: maxBody}
		switch {
		case canceled(parent):
			e.Canceled = true
		case ctx.Err() != nil:
			e.TimedOut = true
		default:
			e.Class = ErrorClass(err)
		}
		return e
	}

	resp, err := client.Do(req.WithContext(ctx))
	if err != nil {
		return Answer{}, fail(0, err)
	}
	defer func() { _ = resp.Body.Close() }()
	a := Answer{Status: resp.StatusCode, Header: resp.Header}
	a.Body, err = io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	switch {
	case err != nil:
		return a, fail(resp.StatusCode, err)
	case int64(len(a.Body)) > maxBody:
		a.Body = a.Body[:maxBody]
		return a, &FetchError{Status: resp.StatusCode, TooLarge: true, Timeout: timeout, Max: maxBody}
	}
	return a, nil
}

// CapTimeout is the cap a plugin's call runs with: limit, or less when
// ctx's deadline (the host's) comes sooner: the time until it, never
// negative.
func CapTimeout(ctx context.Context, limit time.Duration) time.Duration {
	if d, ok := ctx.Deadline(); ok && time.Until(d) < limit {
		return max(time.Until(d), 0)
	}
	return limit
}

// canceled reports whether the caller canceled parent, as opposed to its
// deadline passing.
func canceled(parent context.Context) bool {
	return parent.Err() != nil && !errors.Is(parent.Err(), context.DeadlineExceeded)
}

// abortedMessage says what cut a request that ran with parent's context and
// the cap timeout: "canceled" when parent was canceled, otherwise "timed
// out after" the cap.
func abortedMessage(parent context.Context, timeout time.Duration) string {
	if canceled(parent) {
		return "canceled"
	}
	return timedOut(timeout)
}

// timedOut is "timed out after 3s", the cap rounded to the millisecond.
func timedOut(timeout time.Duration) string {
	return "timed out after " + timeout.Round(time.Millisecond).String()
}

// size is n bytes in words: "1 MiB", "64 KiB", "100 bytes".
func size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + " KiB"
	case n == 1:
		return "1 byte"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}
