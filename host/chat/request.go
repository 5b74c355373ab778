package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"regexp"
	"strings"
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
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if ct == "" || err != nil || mt != "application/json" {
		return request{}, &requestError{Status: http.StatusUnsupportedMediaType,
			Msg: "Content-Type must be application/json"}
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

// decodeRequest validates a request body.
func decodeRequest(body []byte) (request, error) {
	var wr wireRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&wr); err != nil {
		return request{}, jsonError(err)
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
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return badRequest("%s", unknownField(strings.TrimPrefix(err.Error(), "json: unknown field ")))
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

var fieldNamePattern = regexp.MustCompile(`^"[A-Za-z0-9_]{1,64}"$`)

// unknownField names an unknown field when its name is a plain identifier,
// and only then: anything else is the client's text and is not echoed.
func unknownField(quoted string) string {
	if fieldNamePattern.MatchString(quoted) {
		return "unknown field " + quoted
	}
	return "unknown field (the fields are message, sessionId, wakeMode, pendingWake)"
}
