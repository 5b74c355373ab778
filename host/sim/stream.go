package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// streamState is the streaming controls and counters; guarded by Sim.mu.
type streamState struct {
	gap  time.Duration // real time between two word chunks
	cut  int           // streams whose client left before [DONE]
	done int           // streams that reached [DONE]
	// ended is closed and replaced each time a stream ends; nil until a
	// waiter needs it.
	ended chan struct{}
}

// SetStreamGap makes a streamed answer wait d of real time (not on the
// Clock) between two word chunks; 0, the default, sends them at once.
func (s *Sim) SetStreamGap(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stream.gap = d
}

// AwaitStreams waits until n streamed answers have ended, to [DONE] or cut
// (their client left first), and returns how many were done and cut so far;
// with n 0 it returns them at once. A client reads [DONE]
// before the model's handler counts it, so a test that wants the count
// after its stream ends waits here. It returns ctx's error if they have
// not ended by then.
func (s *Sim) AwaitStreams(ctx context.Context, n int) (done, cut int, err error) {
	for {
		s.mu.Lock()
		done, cut = s.stream.done, s.stream.cut
		if done+cut >= n {
			s.mu.Unlock()
			return done, cut, nil
		}
		if s.stream.ended == nil {
			s.stream.ended = make(chan struct{})
		}
		ended := s.stream.ended
		s.mu.Unlock()
		select {
		case <-ended:
		case <-ctx.Done():
			return done, cut, ctx.Err()
		}
	}
}

type streamChunk struct {
	ID      string         `json:"id"`
	Object  string         `json:"object"`
	Created int64          `json:"created"`
	Model   string         `json:"model"`
	Choices []streamChoice `json:"choices"`
	Usage   *chatUsage     `json:"usage,omitempty"`
}

type streamChoice struct {
	Index        int         `json:"index"`
	Delta        streamDelta `json:"delta"`
	FinishReason *string     `json:"finish_reason"`
}

type streamDelta struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

// writeStream answers content as vLLM streams it, one word per chunk. began
// is when the completion's handler began, for Config.OnAnswer.
func (s *Sim) writeStream(w http.ResponseWriter, r *http.Request, began time.Time, id string, created int64, model, content string, includeUsage bool, u chatUsage) {
	s.mu.Lock()
	gap := s.stream.gap
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	// write puts a chunk in the response's buffer; Flush sends it.
	write := func(c streamChunk) bool {
		b, _ := json.Marshal(c)
		_, err := fmt.Fprintf(w, "data: %s\n\n", b)
		return err == nil
	}
	send := func(c streamChunk) bool { return write(c) && rc.Flush() == nil }
	chunk := func(d streamDelta, finish *string) streamChunk {
		return streamChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: model,
			Choices: []streamChoice{{Delta: d, FinishReason: finish}}}
	}
	empty := ""
	ok := write(chunk(streamDelta{Role: "assistant", Content: &empty}, nil))
	written := s.traceNow()
	ok = ok && rc.Flush() == nil
	s.answered(began, written)
	words := strings.SplitAfter(content, " ")
	for i := 0; ok && i < len(words); i++ {
		if i > 0 && gap > 0 {
			t := time.NewTimer(gap)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				ok = false
				continue
			case <-s.closed:
				t.Stop()
				ok = false
				continue
			}
		}
		ok = send(chunk(streamDelta{Content: &words[i]}, nil))
	}
	stop := "stop"
	ok = ok && send(chunk(streamDelta{}, &stop))
	if ok && includeUsage {
		ok = send(streamChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: model, Choices: []streamChoice{}, Usage: &u})
	}
	if ok {
		_, err := fmt.Fprint(w, "data: [DONE]\n\n")
		ok = err == nil && rc.Flush() == nil
	}
	s.mu.Lock()
	if ok {
		s.stream.done++
	} else {
		s.stream.cut++
	}
	if s.stream.ended != nil {
		close(s.stream.ended)
		s.stream.ended = nil
	}
	s.mu.Unlock()
}
