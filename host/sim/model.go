package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxRequestBody caps a completion request body.
const maxRequestBody = 4 << 20

// badGatewayHTML imitates the page RunPod's proxy serves while nothing
// listens on the pod's port.
const badGatewayHTML = `<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>502 Bad Gateway</title></head>
<body>
<h1>502 Bad Gateway</h1>
<p>The pod is running, but nothing is answering on the requested port yet.</p>
</body>
</html>
`

// gate is how the proxy treats a request for a pod id.
type gate int

const (
	gateNotFound gate = iota // not the pod's current id, or not RUNNING: 404
	gateLoading              // RUNNING, model not answering: 502 HTML
	gateReady                // the model answers
)

// proxied reports how the proxy answers for podID now. If the model answers
// and touch is set, it records an answered completion, which resets the idle
// stop. The second result is the pod's name.
func (s *Sim) proxied(podID string, touch bool) (gate, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.byID[podID]
	if p == nil || p.cur == nil || p.cur.podID != podID {
		return gateNotFound, ""
	}
	now := s.clock.Now()
	switch p.cur.at(now, s.tm).phase {
	case phaseLoading:
		return gateLoading, p.name
	case phaseReady:
		if p.cur.firstAnswer.IsZero() {
			p.cur.firstAnswer, p.cur.firstAnswerWall = now, time.Now()
		}
		if touch {
			p.cur.lastActivity = now
			p.cur.answered++
		}
		return gateReady, p.name
	}
	return gateNotFound, ""
}

// writeGate answers a request the model cannot answer.
func writeGate(w http.ResponseWriter, g gate, podID string) {
	switch g {
	case gateNotFound:
		http.Error(w, "404 pod "+podID+" not found", http.StatusNotFound)
	case gateLoading:
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusBadGateway)
		_, _ = io.WriteString(w, badGatewayHTML)
	}
}

// chatRequest is the part of an OpenAI chat completions request the Sim reads.
type chatRequest struct {
	Model         string        `json:"model"`
	Messages      []chatMessage `json:"messages"`
	Stream        bool          `json:"stream"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// text is the message's content: a string, or the text parts of a content
// array joined by newlines.
func (m chatMessage) text() (string, error) {
	if len(m.Content) == 0 || string(m.Content) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(m.Content, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(m.Content, &parts); err != nil {
		return "", errors.New("content is neither a string nor an array of parts")
	}
	var texts []string
	for _, pt := range parts {
		if pt.Type == "text" {
			texts = append(texts, pt.Text)
		}
	}
	return strings.Join(texts, "\n"), nil
}

type chatResponse struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   chatUsage    `json:"usage"`
}

type chatChoice struct {
	Index        int             `json:"index"`
	Message      responseMessage `json:"message"`
	FinishReason string          `json:"finish_reason"`
}

type responseMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// openAIError is the error body vLLM's OpenAI server answers with.
type openAIError struct {
	Error openAIErrorDetail `json:"error"`
}

type openAIErrorDetail struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    int    `json:"code"`
}

func writeBadRequest(w http.ResponseWriter, msg string) {
	writeJSON(w, http.StatusBadRequest, openAIError{openAIErrorDetail{
		Message: msg, Type: "BadRequestError", Code: http.StatusBadRequest,
	}})
}

// handleCompletion answers a chat completion with "echo: " and the last
// message's content, once the model is ready.
func (s *Sim) handleCompletion(w http.ResponseWriter, r *http.Request) {
	began := s.traceNow()
	podID := r.PathValue("podId")
	if g, _ := s.proxied(podID, false); g != gateReady {
		s.mu.Lock()
		s.turnedAway[g]++
		s.mu.Unlock()
		writeGate(w, g, podID)
		return
	}
	var req chatRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxRequestBody))
	if err := dec.Decode(&req); err != nil {
		writeBadRequest(w, "invalid JSON body: "+err.Error())
		return
	}
	if len(req.Messages) == 0 {
		writeBadRequest(w, "messages must not be empty")
		return
	}
	prompt := 0
	var last string
	for i, m := range req.Messages {
		txt, err := m.text()
		if err != nil {
			writeBadRequest(w, fmt.Sprintf("messages[%d]: %v", i, err))
			return
		}
		prompt += len(strings.Fields(txt))
		last = txt
	}

	// The pod may have stopped while the model thought; only an answer that
	// is really given counts as activity.
	g, name := s.proxied(podID, true)
	if g != gateReady {
		writeGate(w, g, podID)
		return
	}
	model := req.Model
	if model == "" {
		model = name
	}
	content := "echo: " + last
	s.mu.Lock()
	s.completions++
	n := s.completions
	created := s.clock.Now().Unix()
	s.mu.Unlock()
	completion := len(strings.Fields(content))
	if req.Stream {
		s.writeStream(w, r, began, "chatcmpl-sim-"+strconv.Itoa(n), created, model, content,
			req.StreamOptions.IncludeUsage, chatUsage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion})
		return
	}
	writeJSON(w, http.StatusOK, chatResponse{
		ID:      "chatcmpl-sim-" + strconv.Itoa(n),
		Object:  "chat.completion",
		Created: created,
		Model:   model,
		Choices: []chatChoice{{
			Index:        0,
			Message:      responseMessage{Role: "assistant", Content: content},
			FinishReason: "stop",
		}},
		Usage: chatUsage{
			PromptTokens:     prompt,
			CompletionTokens: completion,
			TotalTokens:      prompt + completion,
		},
	})
	// The answer sits in the response's buffer; net/http sends it when the
	// handler returns.
	s.answered(began, s.traceNow())
}

// traceNow is the wall clock when Config.OnAnswer is set and the zero time
// otherwise, so that an untraced model reads no clock for it.
func (s *Sim) traceNow() time.Time {
	if s.onAnswer == nil {
		return time.Time{}
	}
	return time.Now()
}

// answered tells Config.OnAnswer, if set, of an answered completion.
func (s *Sim) answered(began, written time.Time) {
	if s.onAnswer != nil {
		s.onAnswer(AnswerTimes{Began: began, Written: written})
	}
}

type modelList struct {
	Object string      `json:"object"`
	Data   []modelCard `json:"data"`
}

type modelCard struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
	Root    string `json:"root"`
}

// handleModels lists the one model a pod serves, named after the pod.
func (s *Sim) handleModels(w http.ResponseWriter, r *http.Request) {
	podID := r.PathValue("podId")
	g, name := s.proxied(podID, false)
	if g != gateReady {
		writeGate(w, g, podID)
		return
	}
	writeJSON(w, http.StatusOK, modelList{
		Object: "list",
		Data: []modelCard{{
			ID: name, Object: "model", Created: s.clock.Now().Unix(), OwnedBy: "vllm", Root: name,
		}},
	})
}

// handleHealth answers like vLLM's /health: 200 with an empty body.
func (s *Sim) handleHealth(w http.ResponseWriter, r *http.Request) {
	podID := r.PathValue("podId")
	if g, _ := s.proxied(podID, false); g != gateReady {
		writeGate(w, g, podID)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// handleProxyOther answers any other proxy path: the proxy's 404/502 while
// the model is not ready, vLLM's 404 once it is.
func (s *Sim) handleProxyOther(w http.ResponseWriter, r *http.Request) {
	podID := r.PathValue("podId")
	if g, _ := s.proxied(podID, false); g != gateReady {
		writeGate(w, g, podID)
		return
	}
	writeJSON(w, http.StatusNotFound, struct {
		Detail string `json:"detail"`
	}{"Not Found"})
}
