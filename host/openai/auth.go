package openai

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"regexp"
	"slices"
	"strings"
)

// auth checks the bearer key of every request when keys are configured.
type auth struct {
	required bool                // a key is wanted even when there is none: every request is refused
	digests  [][sha256.Size]byte // of each key; the keys themselves are not kept
}

// newAuth checks keys; with none it takes any request unless required.
func newAuth(keys []string, required bool) *auth {
	a := &auth{required: required}
	for _, k := range keys {
		if k = strings.TrimSpace(k); k != "" {
			a.digests = append(a.digests, sha256.Sum256([]byte(k)))
		}
	}
	return a
}

// ParseKeys splits the value of [openai] api_keys_env's variable into keys:
// comma-separated, spaces around each ignored, empty entries dropped.
func ParseKeys(value string) []string {
	var keys []string
	for k := range strings.SplitSeq(value, ",") {
		if k = strings.TrimSpace(k); k != "" {
			keys = append(keys, k)
		}
	}
	return keys
}

// allowed reports whether the request carries one of the keys. Every key
// is compared, in constant time over digests of equal length, so the time
// taken says nothing about how much of a key matched, or which.
func (a *auth) allowed(r *http.Request) bool {
	if len(a.digests) == 0 {
		return !a.required
	}
	scheme, key, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(key)))
	match := 0
	for _, d := range a.digests {
		match |= subtle.ConstantTimeCompare(got[:], d[:])
	}
	return match == 1
}

// wrap answers 401 to a request without one of the keys, and passes the
// others to next.
func (a *auth) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !a.allowed(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="wake-on-chat"`)
			if r.URL.Path == "/v1/chat/completions" {
				w.Header().Set(wakeStateHeader, stateUnknown)
			}
			msg := "missing or wrong API key: send Authorization: Bearer <key>"
			writeError(w, &apiError{kind: kindUnauthorized, message: msg})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// cors answers browsers' preflights and marks the answers to allowed
// origins.
type cors struct {
	any     bool
	origins []string
}

// newCORS allows origins; "*" allows any.
func newCORS(origins []string) *cors {
	c := &cors{}
	for _, o := range origins {
		if o == "*" {
			c.any = true
		} else {
			c.origins = append(c.origins, strings.ToLower(o))
		}
	}
	return c
}

// allows reports whether origin may call the door.
func (c *cors) allows(origin string) bool {
	return origin != "" && (c.any || slices.Contains(c.origins, strings.ToLower(origin)))
}

// headerList is what a preflight's Access-Control-Request-Headers may be
// for it to be echoed: header names, commas and spaces.
var headerList = regexp.MustCompile(`^[A-Za-z0-9!#$%&'*+.^_|~, -]+$`)

// wrap answers a preflight (204 from an allowed origin, 403 from any
// other) and marks every answer to an allowed origin.
func (c *cors) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		preflight := r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
		h := w.Header()
		if origin != "" {
			h.Add("Vary", "Origin")
		}
		if !c.allows(origin) {
			if preflight {
				writeError(w, &apiError{kind: kindOriginNotAllowed, message: "this origin may not call the door; see [openai] cors_origins"})
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		if c.any {
			h.Set("Access-Control-Allow-Origin", "*")
		} else {
			h.Set("Access-Control-Allow-Origin", origin)
		}
		h.Set("Access-Control-Expose-Headers", "X-Wake-State, X-Should-Retry")
		if !preflight {
			next.ServeHTTP(w, r)
			return
		}
		h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
		if req := r.Header.Get("Access-Control-Request-Headers"); len(req) <= 1024 && headerList.MatchString(req) {
			// The OpenAI SDKs send headers of their own (x-stainless-*).
			h.Set("Access-Control-Allow-Headers", req)
		} else {
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type")
		}
		h.Set("Access-Control-Max-Age", "600")
		w.WriteHeader(http.StatusNoContent)
	})
}
