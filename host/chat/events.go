package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wakeonchat/wakeonchat/host/events"
	"github.com/wakeonchat/wakeonchat/host/internal/jsonhttp"
	"github.com/wakeonchat/wakeonchat/machines"
)

// Events pushes each pod's record changes; *events.Hub is one. Subscribing
// asks the conductor nothing.
type Events interface {
	Subscribe(pod string) (events.Update, *events.Subscription)
}

// DefaultEventsKeepalive is how often an open pod event stream gets an SSE
// comment, in wall time: proxies cut a silent response (nginx after 60 s).
const DefaultEventsKeepalive = 15 * time.Second

// DefaultMaxEventStreams is how many event streams may be open at once when
// Config.MaxEventStreams is not set: each costs about 36 KB and a file
// descriptor (docs/operations.md, server.max_event_streams).
const DefaultMaxEventStreams = 1000

// streamsRetryAfter is the Retry-After, in seconds, of a stream refused at
// the cap.
const streamsRetryAfter = "30"

// capLogEvery is how often, at most, the refusals at the cap are logged.
const capLogEvery = time.Minute

// streamWriteWait caps each write to an event stream: a client that reads
// nothing for this long (its connection's buffers are full) is closed, and
// its subscription with it. Nothing more can reach it, so it gets no end
// event.
const streamWriteWait = 30 * time.Second

// streamEndWait caps the write of a stream's end event: a client that does
// not take its last event this soon is simply closed, and does not hold the
// host's shutdown up for a whole streamWriteWait.
const streamEndWait = 5 * time.Second

// podEvent is one event of GET /api/pods/{name}/events: the pod's state as
// the machine has it, with no lookup of its own. It never carries a URL.
type podEvent struct {
	Pod             string     `json:"pod"`
	State           string     `json:"state"`
	Status          *string    `json:"status"`
	Ready           bool       `json:"ready"`
	ReadySince      *time.Time `json:"readySince"`
	WakeRequestedAt *time.Time `json:"wakeRequestedAt"`
	Outcome         *string    `json:"outcome"`
	ElapsedSeconds  *int64     `json:"elapsedSeconds"`
	EtaSeconds      *int64     `json:"etaSeconds"`
	At              time.Time  `json:"at"`
}

// podEventKey is what makes an event worth sending: the same key as the
// last event sent is no news (elapsed and remaining time move on their own).
type podEventKey struct {
	state, status, outcome string
	ready                  bool
	readySince, wake       time.Time
}

func (e podEvent) key() podEventKey {
	k := podEventKey{state: e.State, ready: e.Ready}
	if e.Status != nil {
		k.status = *e.Status
	}
	if e.Outcome != nil {
		k.outcome = *e.Outcome
	}
	if e.ReadySince != nil {
		k.readySince = *e.ReadySince
	}
	if e.WakeRequestedAt != nil {
		k.wake = *e.WakeRequestedAt
	}
	return k
}

// streamEnd is the last event of a stream the host ends.
type streamEnd struct {
	Reason string `json:"reason"` // "lagged" or "shutdown"
	Error  string `json:"error"`
}

// handleEvents is GET /api/pods/{name}/events: a text/event-stream whose
// first event is the pod's current view and then one event per change of
// it, pushed by the hub (no conductor lookup of its own), with an SSE comment
// every EventsKeepalive. It ends when the client leaves, when it falls
// behind (a last event says so), when the host shuts down (likewise), and
// when the client has not taken a write for streamWriteWait (no last event
// can reach it). Past MaxEventStreams open streams a new one is refused.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	if !jsonhttp.Allow(w, r, http.MethodGet) {
		return
	}
	name := r.PathValue("name")
	if _, ok := s.cfg.Pods[name]; !ok {
		jsonhttp.Error(w, http.StatusNotFound, unknownPod(name))
		return
	}
	if s.cfg.Events == nil {
		jsonhttp.Error(w, http.StatusServiceUnavailable, "the pod event stream is not available")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	h.Set("X-Content-Type-Options", "nosniff")
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return
	}
	if !s.streams.open() {
		s.refuseStream(w)
		return
	}
	defer s.streams.done()
	cur, sub := s.cfg.Events.Subscribe(name)
	defer sub.Close()
	out := sse{w: w, rc: http.NewResponseController(w)}
	w.WriteHeader(http.StatusOK)
	last := s.podEvent(name, cur, s.cfg.Clock.Now())
	if err := out.send("", last, streamWriteWait); err != nil {
		s.writeFailed(name, err)
		return
	}
	keepalive := time.NewTicker(s.cfg.EventsKeepalive)
	defer keepalive.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-keepalive.C:
			if err := out.write([]byte(": keepalive\n\n"), streamWriteWait); err != nil {
				s.writeFailed(name, err)
				return
			}
		case u, ok := <-sub.C():
			if !ok {
				s.endStream(out, name, sub.Err())
				return
			}
			ev := s.podEvent(name, u, u.At)
			if ev.key() == last.key() {
				continue
			}
			if err := out.send("", ev, streamWriteWait); err != nil {
				s.writeFailed(name, err)
				return
			}
			last = ev
		}
	}
}

// writeFailed logs a stream whose client read nothing for streamWriteWait;
// any other failed write is a client that left.
func (s *Server) writeFailed(pod string, err error) {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		s.cfg.Logger.Info("event stream not drained for pod "+pod+"; closed", "pod", pod)
	}
}

// refuseStream answers a stream past the cap, and logs the refusals at most
// once every capLogEvery.
func (s *Server) refuseStream(w http.ResponseWriter) {
	limit := s.cfg.MaxEventStreams
	if refused, ok := s.streams.refused(time.Now()); ok {
		s.cfg.Logger.Warn("event streams at their cap; refusing new ones", "cap", limit, "refused", refused)
	}
	w.Header().Set("Retry-After", streamsRetryAfter)
	jsonhttp.Error(w, http.StatusServiceUnavailable,
		fmt.Sprintf("too many event streams open (the cap is %d, server.max_event_streams); try again later", limit))
}

// streams counts the open event streams against their cap.
type streams struct {
	limit int64
	n     atomic.Int64

	mu       sync.Mutex
	logged   time.Time // when the refusals were last logged
	unlogged int       // refusals since then
}

// open takes a place for a new stream; false at the cap.
func (c *streams) open() bool {
	for {
		n := c.n.Load()
		if n >= c.limit {
			return false
		}
		if c.n.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// done gives a stream's place back.
func (c *streams) done() { c.n.Add(-1) }

// refused counts a refusal at now; when it is time to log (the first since
// capLogEvery), it returns how many refusals the line reports.
func (c *streams) refused(now time.Time) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unlogged++
	if !c.logged.IsZero() && now.Sub(c.logged) < capLogEvery {
		return 0, false
	}
	n := c.unlogged
	c.logged, c.unlogged = now, 0
	return n, true
}

// endStream writes the last event of a stream the hub ended: it fell
// behind, or the host is shutting down.
func (s *Server) endStream(out sse, pod string, err error) {
	end := streamEnd{Reason: "shutdown", Error: "the host is shutting down"}
	if errors.Is(err, events.ErrLagged) {
		s.cfg.Logger.Warn("event stream lagged for pod "+pod+"; closed", "pod", pod)
		end = streamEnd{Reason: "lagged", Error: "this stream fell behind the pod's changes and is closed; subscribe again for the current view"}
	}
	_ = out.send("end", end, streamEndWait)
}

// podEvent is what u says of pod at at. State and ready are the machine's
// (machines.Reports, through Update.Report). While a wake is in progress,
// elapsed counts from its request and eta is the estimate less that, never
// below zero.
func (s *Server) podEvent(pod string, u events.Update, at time.Time) podEvent {
	state, ready := u.Report()
	rec := u.Record
	e := podEvent{Pod: pod, State: string(state), Ready: ready, At: at.UTC()}
	if u.View.Status != "" {
		st := u.View.Status
		e.Status = &st
	}
	if state == machines.Ready && !rec.ReadyAt.IsZero() {
		t := rec.ReadyAt.UTC()
		e.ReadySince = &t
	}
	if !rec.WakeRequestedAt.IsZero() {
		t := rec.WakeRequestedAt.UTC()
		e.WakeRequestedAt = &t
	}
	if o := rec.Outcome(); o != "" {
		e.Outcome = &o
	}
	if u.InProgress() {
		elapsed := max(0, at.Sub(rec.WakeRequestedAt))
		secs := int64(elapsed / time.Second)
		e.ElapsedSeconds = &secs
		if s.cfg.Wake != nil {
			left := ceilSeconds(max(0, s.cfg.Wake.Estimate(pod).Wake-elapsed))
			e.EtaSeconds = &left
		}
	}
	return e
}

// sse writes server-sent events, each flushed at once.
type sse struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

// send writes one event named name ("" for the default, message) whose
// data is v as JSON, failing if the client has not taken it within wait.
func (o sse) send(name string, v any, wait time.Duration) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var b []byte
	if name != "" {
		b = append(b, "event: "+name+"\n"...)
	}
	b = append(b, "data: "...)
	b = append(b, data...)
	b = append(b, "\n\n"...)
	return o.write(b, wait)
}

// write writes b and flushes it, failing if the client has not taken it
// within wait. After a failure nothing more can be written (net/http keeps
// the error): the stream is over.
func (o sse) write(b []byte, wait time.Duration) error {
	// The server's write timeout is for a turn; a stream lasts as long as
	// its client reads.
	_ = o.rc.SetWriteDeadline(time.Now().Add(wait))
	if _, err := o.w.Write(b); err != nil {
		return err
	}
	return o.rc.Flush()
}
