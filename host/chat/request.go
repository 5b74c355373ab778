package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/wakeonchat/wakeonchat/host/internal/jsonhttp"
)

// Wake modes of a chat request (#715).
const (
	ModeLegacy = ""
	ModeWait   = "wait"
	ModeResume = "resume"
)

// request is a validated POST /api/chat body.
type request struct {
	Message     string
	SessionID   string // "" when the client sent none
	WakeMode    string
	PendingWake string // the key, with ModeResume
}

// requestError is a 4xx with a message that names what was wrong.
type requestError struct {
	Status int
	Msg    string
}

func (e *requestError) Error() string { return e.Msg }

func badRequest(format string, args ...any) *requestError {
	return &requestError{Status: http.StatusBadRequest, Msg: fmt.Sprintf(format, args...)}
}

var sessionIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// wireRequest is the JSON body. Pointers tell absent from empty.
type wireRequest struct {
	Message     *string         `json:"message"`
	SessionID   *string         `json:"sessionId"`
	WakeMode    *string         `json:"wakeMode"`
	PendingWake json.RawMessage `json:"pendingWake"`
}

// readRequest checks the content type and size and decodes the body
// strictly: unknown fields and trailing data are errors. A message longer
// than maxMessage bytes (what a completion request can carry, see
// agent.MaxMessageBytes) is refused like a body over maxBody: the message's
// bytes can outnumber the body's (each invalid UTF-8 byte becomes a
// three-byte U+FFFD), so the body limit alone does not bound them.
func readRequest(w http.ResponseWriter, r *http.Request, maxBody int64, maxMessage int) (request, error) {
	if !jsonhttp.IsJSON(r.Header.Get("Content-Type")) {
		return request{}, &requestError{Status: http.StatusUnsupportedMediaType, Msg: jsonhttp.WantJSON}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return request{}, &requestError{Status: http.StatusRequestEntityTooLarge,
				Msg: fmt.Sprintf("request body is larger than %d bytes", maxBody)}
		}
		return request{}, badRequest("request body could not be read")
	}
	req, err := decodeRequest(body)
	if err == nil && len(req.Message) > maxMessage {
		return request{}, &requestError{Status: http.StatusRequestEntityTooLarge,
			Msg: fmt.Sprintf("message is larger than %d bytes", maxMessage)}
	}
	return req, err
}

// decodeRequest validates a request body. Its keys are checked first
// (checkKeys), so that the decode, which matches keys case-insensitively and
// lets a repeated key overwrite, only ever sees exact, unique ones.
func decodeRequest(body []byte) (request, error) {
	keysErr := checkKeys(body)
	if keysErr != nil && !errors.Is(keysErr, errMalformed) {
		return request{}, keysErr
	}
	var wr wireRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&wr); err != nil {
		return request{}, jsonError(err)
	}
	if keysErr != nil {
		// The same bytes cannot scan as malformed and decode; should the two
		// readers ever disagree, the body is refused all the same.
		return request{}, badRequest("request body is not valid JSON")
	}
	if _, err := dec.Token(); err != io.EOF {
		return request{}, badRequest("request body must be a single JSON object")
	}
	var req request
	switch {
	case wr.Message == nil:
		return request{}, badRequest("message is required")
	case strings.TrimSpace(*wr.Message) == "":
		return request{}, badRequest("message must not be empty")
	}
	req.Message = *wr.Message
	if wr.SessionID != nil {
		if !sessionIDPattern.MatchString(*wr.SessionID) {
			return request{}, badRequest("sessionId must be 1 to 128 letters, digits, '-' or '_'")
		}
		req.SessionID = *wr.SessionID
	}
	if wr.WakeMode != nil {
		switch *wr.WakeMode {
		case ModeWait, ModeResume:
			req.WakeMode = *wr.WakeMode
		default:
			return request{}, badRequest(`wakeMode must be "wait" or "resume"`)
		}
	}
	key, err := pendingKey(wr.PendingWake)
	if err != nil {
		return request{}, err
	}
	switch {
	case req.WakeMode == ModeResume && key == "":
		return request{}, badRequest(`pendingWake is required with wakeMode "resume"`)
	case req.WakeMode != ModeResume && key != "":
		return request{}, badRequest(`pendingWake is only valid with wakeMode "resume"`)
	case req.WakeMode == ModeResume && req.SessionID == "":
		return request{}, badRequest(`sessionId is required with wakeMode "resume"`)
	}
	req.PendingWake = key
	return req, nil
}

// pendingKey accepts the key as a string, or the pendingWake object a wait
// turn returned (its "key" is used).
func pendingKey(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var key string
	if err := json.Unmarshal(raw, &key); err != nil {
		// The object's keys were checked with the body's (checkKeys).
		var obj struct {
			Key string `json:"key"`
		}
		if err := json.Unmarshal(raw, &obj); err != nil {
			return "", badRequest("pendingWake must be the key string (or the pendingWake object)")
		}
		key = obj.Key
	}
	if key == "" || len(key) > 128 || !sessionIDPattern.MatchString(key) {
		return "", badRequest("pendingWake must be the key of a pending wake")
	}
	return key, nil
}

// jsonError names what was wrong with a body that did not decode.
func jsonError(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF):
		return badRequest("request body is empty; want a JSON object")
	case errors.As(err, &syn):
		return badRequest("request body is not valid JSON (at byte %d)", syn.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("request body is not valid JSON (truncated)")
	case errors.As(err, &typ):
		if typ.Field == "" {
			return badRequest("request body must be a JSON object")
		}
		return badRequest("%s must be a %s", typ.Field, jsonKind(typ.Type.Kind().String()))
	default:
		return badRequest("request body is not valid JSON")
	}
}

func jsonKind(k string) string {
	switch k {
	case "string", "ptr":
		return "string"
	default:
		return k
	}
}

// The keys a body may have, spelled exactly: the JSON names of wireRequest's
// fields, and in a pendingWake object those of the marker a wait turn
// returns (pendingWire).
var (
	requestKeys = jsonNames[wireRequest]()
	pendingKeys = jsonNames[pendingWire]()
)

func jsonNames[T any]() []string {
	t := reflect.TypeFor[T]()
	names := make([]string, t.NumField())
	for i := range names {
		names[i], _, _ = strings.Cut(t.Field(i).Tag.Get("json"), ",")
	}
	return names
}

// errMalformed is checkKeys' answer for a body that is not JSON: the decode
// then names what is wrong with it, as it always has.
var errMalformed = errors.New("malformed JSON")

// checkKeys reads body's top-level object, and its pendingWake value when
// that is an object, and checks every key: each must be one of the names
// the object takes, spelled exactly (encoding/json would take "Message" or
// "SESSIONID" for them), and appear once (encoding/json would silently
// keep the last). encoding/json/v2 does both, but only under
// GOEXPERIMENT=jsonv2 in Go 1.26. A value that is not an object, and
// anything after the first value, is left to the decode.
func checkKeys(body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	return checkObject(dec, "", requestKeys, func(key string) error {
		if key != "pendingWake" {
			return skipValue(dec)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return errMalformed
		}
		if len(raw) == 0 || raw[0] != '{' {
			return nil // a key string, null, or a wrong type that the decode names
		}
		inner := json.NewDecoder(bytes.NewReader(raw))
		return checkObject(inner, "pendingWake.", pendingKeys, func(string) error { return skipValue(inner) })
	})
}

// checkObject reads one object from dec, checking each key against names
// and calling value to read the key's value. A value that is not an object
// is left to the decode, which names its type.
func checkObject(dec *json.Decoder, prefix string, names []string, value func(key string) error) error {
	tok, err := dec.Token()
	if err != nil {
		return errMalformed
	}
	if tok != json.Delim('{') {
		return nil
	}
	seen := make(map[string]bool, len(names))
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return errMalformed
		}
		key, _ := tok.(string) // inside an object, Token returns keys as strings
		switch {
		case !slices.Contains(names, key):
			return badRequest("%s", unknownField(prefix, key, names))
		case seen[key]:
			return badRequest("duplicate field %q", prefix+key)
		}
		seen[key] = true
		if err := value(key); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return errMalformed
	}
	return nil
}

// skipValue reads the next value from dec; the decode checks it.
func skipValue(dec *json.Decoder) error {
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return errMalformed
	}
	return nil
}

var fieldNamePattern = regexp.MustCompile(`^[A-Za-z0-9_]{1,64}$`)

// unknownField names an unknown field when its name is a plain identifier,
// and only then: anything else is the client's text and is not echoed. A
// name that differs from a field's only in case says which it is.
func unknownField(prefix, key string, names []string) string {
	if !fieldNamePattern.MatchString(key) {
		return fmt.Sprintf("unknown field (the fields are %s)", prefixed(prefix, names))
	}
	for _, name := range names {
		if strings.EqualFold(key, name) {
			return fmt.Sprintf("unknown field %q (did you mean %q? field names are case-sensitive)", prefix+key, prefix+name)
		}
	}
	return fmt.Sprintf("unknown field %q", prefix+key)
}

func prefixed(prefix string, names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + n
	}
	return strings.Join(out, ", ")
}
