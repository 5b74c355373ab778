package chat

import (
	"net/http"
	"regexp"
	"time"

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
}

func (s *Server) handlePod(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, http.MethodGet) {
		return
	}
	name := r.PathValue("name")
	view, ok := s.cfg.Pods[name]
	if !ok {
		writeError(w, http.StatusNotFound, unknownPod(name))
		return
	}
	rec, err := s.cfg.Wake.Record(name)
	if err != nil {
		s.cfg.Logger.Error("reading the pod record", "pod", name, "err", err)
		writeError(w, http.StatusInternalServerError, "the pod's record could not be read")
		return
	}
	rep := podReport{Pod: name, State: string(rec.State), Lookup: machines.LookupUnreadable}
	if rep.State == "" {
		rep.State = string(machines.Asleep)
	}
	if !rec.WakeRequestedAt.IsZero() {
		t := rec.WakeRequestedAt.UTC()
		rep.WakeRequestedAt = &t
	}
	if rec.Outcome != machines.OutcomeNone {
		o := string(rec.Outcome)
		rep.Outcome = &o
	}
	res, err := view.Lookup(r.Context())
	if err != nil {
		// The conductor cannot be reached and nothing is known: say so, 200,
		// so a polling client keeps polling.
		rep.FromCache = true
		writeJSON(w, http.StatusOK, rep)
		return
	}
	rep.Status, rep.IsRunning, rep.Lookup, rep.FromCache = res.Status, res.IsRunning, string(res.Lookup), res.FromCache
	if res.ReadySince != "" {
		rs := res.ReadySince
		rep.ReadySince = &rs
	}
	rep.Ready = fresh(res, rec, s.cfg.Slack)
	writeJSON(w, http.StatusOK, rep)
}

var podNamePattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// unknownPod names the pod when its name is a valid pod name, and only then:
// anything else is the client's text and is not echoed.
func unknownPod(name string) string {
	if podNamePattern.MatchString(name) {
		return "unknown pod: " + name
	}
	return "unknown pod (not a valid pod name)"
}
