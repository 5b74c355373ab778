package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"

	"github.com/wakeonchat/wakeonchat/host/internal/jsonhttp"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// request is a chat-completions request body as the door reads it: the
// few fields it needs, and where in the raw bytes the fields it rewrites
// are, so that everything else is forwarded byte for byte.
type request struct {
	raw          []byte
	model        string
	stream       bool
	includeUsage bool
	choices      int // n: how many choices the answer has, 1 to maxChoices
	messages     []message
	modelAt      span // the model value's bytes
	messagesAt   span // the messages value's bytes
}

// message is one of the request's messages: its bytes in request.raw and
// the fields the door reads.
type message struct {
	raw     json.RawMessage
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Name    json.RawMessage `json:"name"` // a participant's name; nil when absent
}

// maxChoices is the most choices (n) a request may ask for: OpenAI's own
// limit. A reply is sent as that many copies.
const maxChoices = 128

// badChoices is what n must be.
const badChoices = "n must be an integer from 1 to 128"

// span is [start, end) in request.raw.
type span struct{ start, end int }

// checkMediaType refuses a request whose Content-Type is not JSON
// (jsonhttp.IsJSON, the rule /api/chat has), before anything reads its body:
// a page on another site can make a browser POST text/plain or a form to
// the door without a CORS preflight, and such a request must not run a
// completion or wake a pod.
func checkMediaType(r *http.Request) *apiError {
	if jsonhttp.IsJSON(r.Header.Get("Content-Type")) {
		return nil
	}
	return &apiError{kind: kindMediaType, message: jsonhttp.WantJSON}
}

// parseRequest reads raw, a chat-completions request body, in one pass:
// it is on every completion's way to the model. Its errors are 400s
// naming the field; a malformed message is reported only once the whole
// body proved to be JSON with a model and messages.
func parseRequest(raw []byte) (*request, *apiError) {
	req := &request{raw: raw, choices: 1}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, badRequest("", "the body must be a JSON object (a chat completions request)")
	}
	seen := map[string]bool{}
	var badMessage *apiError
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, notJSON(err)
		}
		key, _ := tok.(string)
		start := skipSeparators(raw, int(dec.InputOffset()))
		var field, problem string // a value of the wrong type: the field and what it must be
		var notArray *apiError
		switch key {
		case "model":
			err = dec.Decode(&req.model)
			field, problem = "model", "model must be a string: the name of one of GET /v1/models"
		case "messages":
			req.messages, badMessage, notArray, err = decodeMessages(dec, raw)
		case "stream":
			err = dec.Decode(&req.stream)
			field, problem = "stream", "stream must be true or false"
		case "n":
			var n *int // null is the default, 1
			err = dec.Decode(&n)
			if n != nil {
				req.choices = *n
			}
			field, problem = "n", badChoices
		case "stream_options":
			var so struct {
				IncludeUsage *bool `json:"include_usage"`
			}
			err = dec.Decode(&so)
			req.includeUsage = so.IncludeUsage != nil && *so.IncludeUsage
			field, problem = "stream_options", "stream_options must be an object; include_usage true or false"
		default:
			var skip json.RawMessage
			err = dec.Decode(&skip)
		}
		var typ *json.UnmarshalTypeError
		if err != nil && !errors.As(err, &typ) {
			return nil, notJSON(err)
		}
		switch key {
		case "model", "messages", "stream", "stream_options", "n":
			if seen[key] {
				return nil, badRequest(key, key+" appears more than once")
			}
			seen[key] = true
		}
		switch {
		case err != nil:
			return nil, badRequest(field, problem)
		case notArray != nil:
			return nil, notArray
		}
		switch key {
		case "model":
			req.modelAt = span{start, int(dec.InputOffset())}
		case "messages":
			req.messagesAt = span{start, int(dec.InputOffset())}
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, notJSON(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, badRequest("", "the body must be one JSON object, with nothing after it")
	}
	switch {
	case !seen["model"] || req.model == "":
		return nil, badRequest("model", "model is required: the name of one of GET /v1/models")
	case !seen["messages"]:
		return nil, badRequest("messages", "messages is required")
	case len(req.messages) == 0:
		return nil, badRequest("messages", "messages must not be empty")
	case badMessage != nil:
		return nil, badMessage
	case req.choices < 1 || req.choices > maxChoices:
		return nil, badRequest("n", badChoices)
	}
	return req, nil
}

// decodeMessages reads the messages array from dec, each message's bytes a
// slice of raw. notArray answers a value that is not an array; bad is the
// first message that is not an object with a role; err is the body's JSON
// failing.
func decodeMessages(dec *json.Decoder, raw []byte) (msgs []message, bad, notArray *apiError, err error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, nil, nil, err
	}
	if tok != json.Delim('[') {
		if tok == json.Delim('{') {
			// The object must still be JSON for this to be the answer.
			for depth := 1; depth > 0; {
				if tok, err = dec.Token(); err != nil {
					return nil, nil, nil, err
				}
				switch tok {
				case json.Delim('{'), json.Delim('['):
					depth++
				case json.Delim('}'), json.Delim(']'):
					depth--
				}
			}
		}
		return nil, nil, badRequest("messages", "messages must be an array of message objects"), nil
	}
	for i := 0; dec.More(); i++ {
		start := skipSeparators(raw, int(dec.InputOffset()))
		var m message
		err := dec.Decode(&m)
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &typ):
			if bad == nil {
				bad = badRequest(fmt.Sprintf("messages[%d]", i), fmt.Sprintf("messages[%d] must be an object", i))
			}
		case err != nil:
			return nil, nil, nil, err
		case m.Role == "" && bad == nil:
			bad = badRequest(fmt.Sprintf("messages[%d].role", i), fmt.Sprintf("messages[%d].role is required", i))
		}
		m.raw = raw[start:dec.InputOffset()]
		msgs = append(msgs, m)
	}
	_, err = dec.Token() // the closing bracket
	return msgs, bad, nil, err
}

// notJSON is the 400 for a body that is not valid JSON.
func notJSON(err error) *apiError {
	return badRequest("", "the body is not valid JSON: "+pluginapi.JSONProblem(err))
}

// skipSeparators skips the whitespace, colon and comma before a value at
// i.
func skipSeparators(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r' || raw[i] == ':' || raw[i] == ',') {
		i++
	}
	return i
}

// forward is the body sent to the model: raw with the model's value
// replaced by model and, when messages is not nil, the messages' value by
// it. Every other byte is the client's.
func (r *request) forward(model string, messages []byte) []byte {
	type edit struct {
		at   span
		with []byte
	}
	name, _ := json.Marshal(model)
	edits := []edit{{r.modelAt, name}}
	if messages != nil {
		edits = append(edits, edit{r.messagesAt, messages})
	}
	slices.SortFunc(edits, func(a, b edit) int { return a.at.start - b.at.start })
	out := make([]byte, 0, len(r.raw)+len(name))
	last := 0
	for _, e := range edits {
		out = append(out, r.raw[last:e.at.start]...)
		out = append(out, e.with...)
		last = e.at.end
	}
	return append(out, r.raw[last:]...)
}
