package chat

import (
	"net/http"
	"regexp"
	"time"

	"github.com/wakeonchat/wakeonchat/host/internal/jsonhttp"
	"github.com/wakeonchat/wakeonchat/host/resolve"
	"github.com/wakeonchat/wakeonchat/machines"
)

// podReport is GET /api/pods/{name}: the conductor's view plus the
// machine's. It never carries a URL.
type podReport struct {
	Pod             string     `json:"pod"`
	Status          string     `json:"status"`
	IsRunning       bool       `json:"isRunning"`
	ReadySince      *string    `json:"readySince"`
	Lookup          string     `json:"lookup"`
	FromCache       bool       `json:"fromCache"`
	State           string     `json:"state"`
	WakeRequestedAt *time.Time `json:"wakeRequestedAt"`
	Outcome         *string    `json:"outcome"`
	Ready           bool       `json:"ready"`
	// The estimate: how long a wake of this pod takes (the median of its
	// last completed wakes, or expected_wake while estimateWakes is 0), and
	// for a wake in progress when it is due and the seconds left until then
	// (rounded up, never negative: etaSeconds as the event stream has it).
	EstimateSeconds int64      `json:"estimateSeconds"`
	EstimateWakes   int        `json:"estimateWakes"`
	EtaAt           *time.Time `json:"etaAt"`
	EtaSeconds      *int64     `json:"etaSeconds"`
}

func (s *Server) handlePod(w http.ResponseWriter, r *http.Request) {
	if !jsonhttp.Allow(w, r, http.MethodGet) {
		return
	}
	name := r.PathValue("name")
	view, ok := s.cfg.Pods[name]
	if !ok {
		jsonhttp.Error(w, http.StatusNotFound, unknownPod(name))
		return
	}
	// Lookup first: what the conductor says reaches the machine (through
	// the resolver's observer) before the record is read, so the state
	// agrees with it.
	res, lookupErr := view.Lookup(r.Context())
	rec, err := s.cfg.Wake.Record(r.Context(), name)
	if err != nil {
		s.cfg.Logger.Error("reading the pod record", "pod", name, "err", err)
		// The store is down (docs/http-contract.md): a client polls again.
		jsonhttp.Error(w, http.StatusServiceUnavailable, "the pod's record could not be read: the store is unavailable")
		return
	}
	rep := podReport{Pod: name, Lookup: machines.LookupUnreadable, FromCache: true}
	v := machines.View{Lookup: machines.LookupUnreadable}
	if lookupErr == nil {
		// Otherwise the conductor cannot be reached and nothing is known:
		// say so, 200, so a polling client keeps polling.
		v = viewOf(res)
		rep.Status, rep.IsRunning, rep.Lookup, rep.FromCache = res.Status, res.IsRunning, string(res.Lookup), res.FromCache
		if !res.ReadySince.IsZero() {
			rs := res.ReadySince.UTC().Format(time.RFC3339)
			rep.ReadySince = &rs
		}
	}
	state, ready := machines.Reports(rec, v)
	rep.State, rep.Ready = string(state), ready
	if !rec.WakeRequestedAt.IsZero() {
		t := rec.WakeRequestedAt.UTC()
		rep.WakeRequestedAt = &t
	}
	if o := rec.Outcome(); o != "" {
		rep.Outcome = &o
	}
	est := s.cfg.Wake.Estimate(name)
	rep.EstimateSeconds, rep.EstimateWakes = int64(est.Wake.Round(time.Second)/time.Second), est.Wakes
	if at, remaining, ok := s.cfg.Policy.Eta(rec, est, s.cfg.Clock.Now()); ok {
		at, left := at.UTC(), ceilSeconds(remaining)
		rep.EtaAt, rep.EtaSeconds = &at, &left
	}
	jsonhttp.Write(w, http.StatusOK, rep)
}

// ceilSeconds is d in whole seconds, rounded up: a remaining time is never
// said shorter than it is.
func ceilSeconds(d time.Duration) int64 { return int64((d + time.Second - 1) / time.Second) }

var podNamePattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// unknownPod names the pod when its name is a valid pod name, and only then:
// anything else is the client's text and is not echoed.
func unknownPod(name string) string {
	if podNamePattern.MatchString(name) {
		return "unknown pod: " + name
	}
	return "unknown pod (not a valid pod name)"
}

// viewOf is what the conductor said, as the machine reads it.
func viewOf(res resolve.Resolution) machines.View {
	return machines.View{Status: res.Status, IsRunning: res.IsRunning, Lookup: string(res.Lookup),
		ReadySince: res.ReadySince, FromCache: res.FromCache}
}
