package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

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
	messages     []json.RawMessage
	modelAt      span // the model value's bytes
	messagesAt   span // the messages value's bytes
}

// span is [start, end) in request.raw.
type span struct{ start, end int }

// parseRequest reads raw, a chat-completions request body. Its errors are
// 400s naming the field.
func parseRequest(raw []byte) (*request, *apiError) {
	req := &request{raw: raw}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, badRequest("", "the body must be a JSON object (a chat completions request)")
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, badRequest("", "the body is not valid JSON: "+pluginapi.JSONProblem(err))
		}
		key, _ := tok.(string)
		start := valueStart(raw, int(dec.InputOffset()))
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, badRequest("", "the body is not valid JSON: "+pluginapi.JSONProblem(err))
		}
		at := span{start, int(dec.InputOffset())}
		switch key {
		case "model", "messages", "stream", "stream_options":
			if seen[key] {
				return nil, badRequest(key, key+" appears more than once")
			}
			seen[key] = true
		}
		switch key {
		case "model":
			if err := json.Unmarshal(v, &req.model); err != nil {
				return nil, badRequest("model", "model must be a string: the name of one of GET /v1/models")
			}
			req.modelAt = at
		case "messages":
			if err := json.Unmarshal(v, &req.messages); err != nil || req.messages == nil {
				return nil, badRequest("messages", "messages must be an array of message objects")
			}
			req.messagesAt = at
		case "stream":
			if string(v) != "null" {
				if err := json.Unmarshal(v, &req.stream); err != nil {
					return nil, badRequest("stream", "stream must be true or false")
				}
			}
		case "stream_options":
			var so struct {
				IncludeUsage *bool `json:"include_usage"`
			}
			if string(v) != "null" {
				if err := json.Unmarshal(v, &so); err != nil {
					return nil, badRequest("stream_options", "stream_options must be an object; include_usage true or false")
				}
			}
			req.includeUsage = so.IncludeUsage != nil && *so.IncludeUsage
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, badRequest("", "the body is not valid JSON: "+pluginapi.JSONProblem(err))
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
	}
	for i, m := range req.messages {
		var msg struct {
			Role *string `json:"role"`
		}
		if err := json.Unmarshal(m, &msg); err != nil {
			return nil, badRequest(fmt.Sprintf("messages[%d]", i), fmt.Sprintf("messages[%d] must be an object", i))
		}
		if msg.Role == nil || *msg.Role == "" {
			return nil, badRequest(fmt.Sprintf("messages[%d].role", i), fmt.Sprintf("messages[%d].role is required", i))
		}
	}
	return req, nil
}

// valueStart skips the whitespace and the colon after a key at i.
func valueStart(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r' || raw[i] == ':') {
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
