// Package jsonhttp is what the host's HTTP servers share so that every
// answer they give is JSON: the body writers, the 404 that names a missing
// endpoint without echoing a client's text, and the guard that keeps
// ServeMux's own answers (an HTML redirect for an unclean path, a plain-text
// 400 for a path that is not one) from reaching a client; and the one rule
// for what a JSON request body must say it is.
package jsonhttp

import (
	"encoding/json"
	"mime"
	"net/http"
	"path"
	"strconv"
)

// internalError is the body written when a value does not marshal.
const internalError = `{"error":"internal error"}` + "\n"

// Write writes v, marshalled and newline-terminated, as the response body
// with status; a v that does not marshal is a 500 {"error":"internal error"}.
func Write(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(internalError)
	} else {
		b = append(b, '\n')
	}
	WriteRaw(w, status, b)
}

// Error writes {"error": msg} with status. msg is the caller's own words,
// never an error's text.
func Error(w http.ResponseWriter, status int, msg string) {
	Write(w, status, map[string]string{"error": msg})
}

// WriteRaw writes body, already JSON, with status.
func WriteRaw(w http.ResponseWriter, status int, body []byte) {
	WriteBytes(w, status, "application/json", body)
}

// WriteBytes writes body, whole, as contentType with status: its length
// given, and no sniffing.
func WriteBytes(w http.ResponseWriter, status int, contentType string, body []byte) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// Allow reports whether r uses method (HEAD goes with GET); when it does
// not, it answers 405 with an Allow header and an error naming both
// methods.
func Allow(w http.ResponseWriter, r *http.Request, method string) bool {
	if r.Method == method || (method == http.MethodGet && r.Method == http.MethodHead) {
		return true
	}
	w.Header().Set("Allow", method)
	Error(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed; use "+method)
	return false
}

// WantJSON is the message of the 415 for a request that is not JSON.
const WantJSON = "Content-Type must be application/json"

// IsJSON reports whether contentType, a request's Content-Type header, is
// application/json, with or without parameters ("application/json;
// charset=utf-8"; names are case-insensitive). Nothing else is: not a
// missing header, not a malformed one, not a +json suffix type. The rule
// also keeps other sites off the host's JSON endpoints: a browser sends a
// cross-origin POST without asking first (no CORS preflight) only as
// text/plain, form data or multipart, so a handler that checks this before
// it does anything acts on no such request.
func IsJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json"
}

// PlainPath reports whether p may be echoed in an error: a slash and at
// most 127 more of A-Z a-z 0-9 / _ . -. Any other path is the client's text
// and could be a URL or markup.
func PlainPath(p string) bool {
	if len(p) == 0 || len(p) > 128 || p[0] != '/' {
		return false
	}
	for i := 1; i < len(p); i++ {
		switch c := p[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '/', c == '_', c == '.', c == '-':
		default:
			return false
		}
	}
	return true
}

// NoEndpoint is the message of a 404 for r: "no such endpoint: GET /x; "
// followed by serves (what the server does serve), with the method and path
// only when the path is plain.
func NoEndpoint(r *http.Request, serves string) string {
	if PlainPath(r.URL.Path) {
		return "no such endpoint: " + r.Method + " " + r.URL.Path + "; " + serves
	}
	return "no such endpoint; " + serves
}

// Guard registers notFound on mux for every path mux routes nowhere else
// and returns mux behind a guard that sends notFound the requests whose
// path mux would answer itself: one that is not clean (/api//chat,
// /api/pods/../healthz: ServeMux redirects with an HTML body) or not a path
// at all (OPTIONS *: a plain-text 400).
func Guard(mux *http.ServeMux, notFound http.HandlerFunc) http.Handler {
	mux.Handle("/", notFound)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; p == "" || p[0] != '/' || path.Clean(p) != p {
			notFound(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
}
