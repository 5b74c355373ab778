package events

import (
	"errors"
	"net/url"
	"sync"
	"time"

	"github.com/wakeonchat/wakeonchat/engine"
	"github.com/wakeonchat/wakeonchat/host/wake"
	"github.com/wakeonchat/wakeonchat/machines"
)

// DefaultBuffer is how many updates a subscriber may hold unread before it
// is closed as lagged. A wake makes a handful of changes (waking, loading,
// ready), so a reader that is merely slow never gets near it.
const DefaultBuffer = 16

var (
	// ErrLagged is why a subscription ended when its buffer was full as a
	// change came: it missed that change and every later one.
	ErrLagged = errors.New("events: the subscriber fell behind")
	// ErrClosed is why a subscription ended when the hub was closed (the
	// host is shutting down).
	ErrClosed = errors.New("events: hub closed")
)

// Update is a pod's record and what the conductor last said of it, as far
// as the host knows, without asking it.
type Update struct {
	Record machines.Record
	// View is the conductor's last word that came with a change: Status is
	// the last status the host saw ("" when it has seen none since it
	// started). Lookup is the change's lookup, FOUND when the change carried
	// none (the machine took it as evidence: a model's answer, a wake's
	// outcome), and UNREADABLE until the host has seen a change, so that a
	// record stored before the host started is never reported freshly ready
	// (D8).
	View machines.View
	// At is when the change was decided; zero for a pod without a change
	// since the hub started.
	At time.Time
}

// Report is what GET /api/pods/{name} would say of u: the machine's state,
// and whether the model is freshly ready (machines.Reports).
func (u Update) Report() (engine.State, bool) { return machines.Reports(u.Record, u.View) }

// unseen is the view of a pod the host has seen no change of since it
// started: not fresh, so never ready.
var unseen = machines.View{Lookup: machines.LookupUnreadable}

// viewAfter is the view after a change whose event is ev, prev the view
// before it.
func viewAfter(prev machines.View, ev machines.Event) machines.View {
	v := machines.View{Status: prev.Status, Lookup: ev.Lookup}
	if ev.Status != "" {
		v.Status = ev.Status
	}
	if v.Lookup == "" {
		v.Lookup = machines.LookupFound
	}
	return v
}

// Hub fans each pod's record changes out to its subscribers. It is safe for
// concurrent use; create it with New.
type Hub struct {
	buffer int

	mu     sync.Mutex
	pods   map[string]*pod
	closed bool
}

// pod is one pod's last update and its subscribers.
type pod struct {
	last  Update
	known bool // last holds a record (seeded or published)
	subs  map[*Subscription]struct{}
}

// New returns a Hub whose subscribers may each hold buffer updates unread;
// DefaultBuffer when buffer is not positive.
func New(buffer int) *Hub {
	if buffer <= 0 {
		buffer = DefaultBuffer
	}
	return &Hub{buffer: buffer, pods: make(map[string]*pod)}
}

// Seed tells the hub the stored records (the store's at start-up), so that a
// first Update carries the record even before anything changed. A pod the
// hub already knows keeps what it knows: Seed never moves a pod back.
func (h *Hub) Seed(recs []machines.Record) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range recs {
		p := h.podLocked(r.Pod)
		if !p.known {
			p.last, p.known = Update{Record: r, View: unseen}, true
		}
	}
}

// Publish records ch as its pod's current update and hands it to every
// subscriber of the pod. It never blocks: a subscriber whose buffer is full
// is closed with ErrLagged. It is wake.Config.Changed; after Close it does
// nothing.
func (h *Hub) Publish(ch wake.Change) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	p := h.podLocked(ch.After.Pod)
	h.publishLocked(p, Update{Record: ch.After, View: viewAfter(p.view(), ch.Event), At: ch.Event.At})
}

// view is the view of p's current update; unseen before any.
func (p *pod) view() machines.View {
	if p.known {
		return p.last.View
	}
	return unseen
}

// publishLocked makes u p's current update and hands it to every
// subscriber of p.
func (h *Hub) publishLocked(p *pod, u Update) {
	p.last, p.known = u, true
	for s := range p.subs {
		select {
		case s.c <- p.last:
		default:
			h.endLocked(s, ErrLagged)
		}
	}
}

// Elsewhere publishes rec, a record that another host sharing the store
// stored (host/app learns it from the store's notices), as its pod's
// current update at at, unless the hub's current record is rec already. Its
// view keeps the last status this host saw, and is fresh: the host that
// stored it had the conductor's or the model's word for it. It reports
// whether rec was news. Like Publish it never blocks, and after Close it
// does nothing; the caller calls it in order with Publish (under the pod's
// lock, wake.Coordinator.Elsewhere).
func (h *Hub) Elsewhere(rec machines.Record, at time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || h.currentLocked(rec.Pod).Record.Equal(rec) {
		return false
	}
	p := h.podLocked(rec.Pod)
	h.publishLocked(p, Update{Record: rec, View: viewAfter(p.view(), machines.Event{}), At: at})
	return true
}

// Current is pod's current update: the last published, else the seeded
// record, else a new record (asleep), with a view that is not fresh.
func (h *Hub) Current(pod string) Update {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.currentLocked(pod)
}

// Subscribe returns pod's current update and a subscription to every later
// one. After Close the subscription is already ended (ErrClosed). The caller
// must Close the subscription when it stops reading.
func (h *Hub) Subscribe(pod string) (Update, *Subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := &Subscription{hub: h, pod: pod, c: make(chan Update, h.buffer)}
	cur := h.currentLocked(pod)
	if h.closed {
		s.err, s.ended = ErrClosed, true
		close(s.c)
		return cur, s
	}
	h.podLocked(pod).subs[s] = struct{}{}
	return cur, s
}

// Subscribers is how many subscriptions to pod are live.
func (h *Hub) Subscribers(pod string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if p := h.pods[pod]; p != nil {
		return len(p.subs)
	}
	return 0
}

// AllSubscribers is how many subscriptions are live, to any pod: every
// open pod event stream and every held OpenAI request has one
// (wakeonchat_event_subscribers).
func (h *Hub) AllSubscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, p := range h.pods {
		n += len(p.subs)
	}
	return n
}

// Close ends every subscription with ErrClosed; later subscriptions end at
// once and later changes are dropped. The host closes the hub when it starts
// shutting down, so that no open stream holds the shutdown up. Closing twice
// is harmless.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for _, p := range h.pods {
		for s := range p.subs {
			h.endLocked(s, ErrClosed)
		}
	}
}

func (h *Hub) podLocked(name string) *pod {
	p := h.pods[name]
	if p == nil {
		p = &pod{subs: make(map[*Subscription]struct{})}
		h.pods[name] = p
	}
	return p
}

func (h *Hub) currentLocked(name string) Update {
	if p := h.pods[name]; p != nil && p.known {
		return p.last
	}
	return Update{Record: machines.NewRecord(name), View: unseen}
}

// endLocked removes s, records why it ended and closes its channel: the
// reader gets the updates already buffered, then the close.
func (h *Hub) endLocked(s *Subscription, err error) {
	if s.ended {
		return
	}
	s.err, s.ended = err, true
	delete(h.pods[s.pod].subs, s)
	close(s.c)
}

// Subscription is one subscriber's updates of one pod.
type Subscription struct {
	hub *Hub
	pod string
	c   chan Update

	// Under hub.mu.
	err   error
	ended bool
}

// C delivers the updates in the order of the changes. It is closed when the
// subscription ends: then Err says why.
func (s *Subscription) C() <-chan Update { return s.c }

// Err is why the subscription ended: ErrLagged, ErrClosed, or nil (the
// subscriber closed it, or it has not ended).
func (s *Subscription) Err() error {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	return s.err
}

// Close ends the subscription; the hub forgets it. Closing twice, or after
// the subscription ended, is harmless.
func (s *Subscription) Close() {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	s.hub.endLocked(s, nil)
}

// InProgress reports whether u's record is on a wake whose outcome is not
// known yet (machines.InProgress): the time since its request is its elapsed
// time, and the estimate less that is what remains.
func (u Update) InProgress() bool {
	return machines.InProgress(u.Record.State) && !u.Record.WakeRequestedAt.IsZero()
}

// Path is where pod's event stream is served on the HTTP API (host/chat:
// GET /api/pods/{name}/events).
func Path(pod string) string { return "/api/pods/" + url.PathEscape(pod) + "/events" }
