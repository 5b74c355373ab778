package sim

import (
	"encoding/json"
	"net/http"
	"time"
)

// Pod statuses, as the conductor reports them.
const (
	StatusExited  = "EXITED"
	StatusCreated = "CREATED"
	StatusRunning = "RUNNING"
)

// Lookup results, as the conductor reports them.
const (
	LookupFound    = "FOUND"
	LookupNotFound = "NOT_FOUND"
)

// PodView is the body of GET /api/pods/{name}.
type PodView struct {
	Name      string `json:"name"`
	Status    string `json:"status"`
	IsRunning bool   `json:"isRunning"`
	// ProxyURL is {URL}/proxy/{podId} while RUNNING, else "".
	ProxyURL string `json:"proxyUrl"`
	// PodID is the current pod, or while a replacement is being created (and
	// when asleep) the last pod that existed; "" if none ever did.
	PodID string `json:"podId"`
	// ReadySince is when PodID's model started answering, RFC 3339 UTC to the
	// second; omitted until it has. It stays after that pod stops, and goes
	// when a new wake begins.
	ReadySince string `json:"readySince,omitempty"`
	Lookup     string `json:"lookup"`
}

// notFoundBody is the body of a 404 for an unknown pod name.
type notFoundBody struct {
	Error  string `json:"error"`
	Lookup string `json:"lookup"`
}

// view is p as GET reports it at now, with proxy URLs under base. Callers hold
// s.mu.
func (s *Sim) view(p *pod, now time.Time, base string) PodView {
	v := PodView{Name: p.name, Status: StatusExited, PodID: p.lastPodID, Lookup: LookupFound}
	if p.cur == nil {
		return v
	}
	st := p.cur.at(now, s.tm)
	if st.created {
		v.PodID = p.cur.podID
	}
	if !st.readySince.IsZero() {
		v.ReadySince = st.readySince.UTC().Truncate(time.Second).Format(time.RFC3339)
	}
	switch st.phase {
	case phaseCreated:
		v.Status = StatusCreated
	case phaseLoading, phaseReady:
		v.Status = StatusRunning
		v.IsRunning = true
		v.ProxyURL = base + "/proxy/" + p.cur.podID
	}
	return v
}

// baseURL is URL(), or when the Sim is not listening itself, the server the
// request reached. Callers hold s.mu.
func (s *Sim) baseURL(r *http.Request) string {
	if s.url != "" {
		return s.url
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

func (s *Sim) handleGet(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	p := s.pods[r.PathValue("name")]
	var v PodView
	if p != nil {
		p.lookups++
		v = s.view(p, s.clock.Now(), s.baseURL(r))
	}
	s.mu.Unlock()
	if p == nil {
		writePodNotFound(w)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// handleStart wakes the pod or joins the wake in flight, then holds the
// request until the pod is RUNNING (unless NoStartHold).
func (s *Sim) handleStart(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	p := s.pods[r.PathValue("name")]
	if p == nil {
		s.mu.Unlock()
		writePodNotFound(w)
		return
	}
	p.starts++
	if code := p.forceStart; code != 0 {
		s.mu.Unlock()
		writeForced(w, code)
		return
	}
	now := s.clock.Now()
	wk := s.begin(p, now)
	st := wk.at(now, s.tm)
	s.mu.Unlock()

	if st.phase >= phaseLoading {
		writeJSON(w, http.StatusOK, statusBody{StatusRunning})
		return
	}
	if !s.hold {
		writeJSON(w, http.StatusAccepted, statusBody{"STARTING"})
		return
	}
	tick := time.NewTicker(holdPoll)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			writeError(w, http.StatusServiceUnavailable, "start request cancelled before the pod was running")
			return
		case <-s.closed:
			writeError(w, http.StatusServiceUnavailable, "simulator closed")
			return
		case <-tick.C:
		}
		s.mu.Lock()
		st = wk.at(s.clock.Now(), s.tm)
		s.mu.Unlock()
		switch {
		case st.running:
			// RUNNING now, or it ran and has stopped again since the last look
			// (a fake clock can jump): either way the start did its job.
			writeJSON(w, http.StatusOK, statusBody{StatusRunning})
			return
		case st.phase == phaseAsleep:
			writeError(w, http.StatusConflict, "pod stopped before it was running")
			return
		}
	}
}

func (s *Sim) handleStop(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	p := s.pods[r.PathValue("name")]
	if p != nil {
		p.stops++
	}
	if p != nil && p.cur != nil {
		now := s.clock.Now()
		if p.cur.at(now, s.tm).phase != phaseAsleep {
			p.cur.stoppedAt = now
		}
	}
	s.mu.Unlock()
	if p == nil {
		writePodNotFound(w)
		return
	}
	writeJSON(w, http.StatusOK, statusBody{StatusExited})
}

type statusBody struct {
	Status string `json:"status"`
}

type errorBody struct {
	Error string `json:"error"`
}

func writePodNotFound(w http.ResponseWriter) {
	writeJSON(w, http.StatusNotFound, notFoundBody{Error: "pod not found", Lookup: LookupNotFound})
}

// writeForced answers a start refused (or faked) by ForceStartStatus.
func writeForced(w http.ResponseWriter, code int) {
	if code >= 400 {
		writeError(w, code, http.StatusText(code))
		return
	}
	writeJSON(w, code, statusBody{http.StatusText(code)})
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, errorBody{msg})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		// Only the package's own plain structs reach here.
		panic("sim: encode response: " + err.Error())
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(append(body, '\n'))
}
