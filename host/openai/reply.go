package openai

import (
	"encoding/json"
	"net/http"

	"github.com/wakeonchat/wakeonchat/machines"
)

// The door's own answers: a status reply as an assistant message, in the
// shapes strict clients check (every chunk with the same id, object,
// created and model; the role in the first delta; finish_reason "stop"
// last; data: [DONE]).

type completion struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"`
	Created int64    `json:"created"`
	Model   string   `json:"model"`
	Choices []choice `json:"choices"`
	Usage   usage    `json:"usage"`
}

type choice struct {
	Index        int             `json:"index"`
	Message      choiceMessage   `json:"message"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason string          `json:"finish_reason"`
}

type choiceMessage struct {
	Role    string  `json:"role"`
	Content string  `json:"content"`
	Refusal *string `json:"refusal"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

type chunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []chunkChoice `json:"choices"`
	Usage   *usage        `json:"usage,omitempty"`
}

type chunkChoice struct {
	Index        int             `json:"index"`
	Delta        delta           `json:"delta"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
}

type delta struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

var null = json.RawMessage("null")

// reply answers the policy's decision d, its text as the assistant's
// message of each of the request's n choices: a chat.completion, or a
// complete chunk sequence for a stream (inside the stream when its head was
// sent already, as after a hold). Its state is X-Wake-State.
func (s *Server) reply(t *turn, d machines.Decision) {
	t.result = string(d.Reply)
	text, state := d.Text, string(d.To)
	id := "chatcmpl-wake-" + s.cfg.NewID()
	created := s.cfg.Clock.Now().Unix()
	model := t.p.Name
	if !t.req.stream {
		t.w.Header().Set(wakeStateHeader, state)
		cc := completion{ID: id, Object: "chat.completion", Created: created, Model: model, Choices: make([]choice, t.req.choices)}
		for i := range cc.Choices {
			cc.Choices[i] = choice{Index: i, Message: choiceMessage{Role: "assistant", Content: text}, Logprobs: null, FinishReason: "stop"}
		}
		writeJSON(t.w, http.StatusOK, cc)
		return
	}
	if !t.started {
		t.head("text/event-stream", state, false)
	}
	stop, empty := "stop", ""
	c := chunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: model}
	// n choices (the request's n) stream as OpenAI streams them: one choice
	// a chunk, each step for every choice in turn.
	for _, ch := range []chunkChoice{
		{Delta: delta{Role: "assistant", Content: &empty}, Logprobs: null},
		{Delta: delta{Content: &text}, Logprobs: null},
		{Delta: delta{}, Logprobs: null, FinishReason: &stop},
	} {
		for i := range t.req.choices {
			ch.Index = i
			c.Choices = []chunkChoice{ch}
			t.event(s, c)
		}
	}
	if t.req.includeUsage {
		c.Choices, c.Usage = []chunkChoice{}, &usage{}
		t.event(s, c)
	}
	_ = t.write(s, []byte("data: [DONE]\n\n"))
}
