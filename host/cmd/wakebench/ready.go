package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/wakeonchat/wakeonchat/host/sim"
)

// readySim is a pod that wakes in milliseconds and does not idle out during
// the bench; its model answers at once.
func readySim() sim.Config {
	return sim.Config{
		CreateDelay: time.Millisecond, BootDelay: time.Millisecond, LoadDelay: time.Millisecond,
		IdleStop: 6 * time.Hour,
	}
}

// The turn both paths send. systemPrompt is [agent] system_prompt's default,
// which the host puts before the message of a new session.
const (
	readyMessage = "hello"
	systemPrompt = "You are a helpful assistant."
)

// readyWithin bounds waking the ready-path pod.
const readyWithin = 5 * time.Second

// readyRun is one run of measurement 2.
type readyRun struct {
	host, direct latency
	added        latency  // host minus direct, p50 and p99
	floor        latency  // the same completion through the floor proxy
	floorAdded   latency  // floor minus direct
	legs         pathLegs // each sequential request split at the model
	errs         []error
	fp           footprint
	startup      time.Duration
}

// ready runs measurement 2 once: the pod is woken and ready before the host
// starts; then the same completion goes alternately through the host's
// /api/chat (a new session each time, as a fresh client would) and straight
// to the simulated model, one request at a time.
func (b *harness) ready(ctx context.Context, run int) (r readyRun, err error) {
	watch := &answerWatch{}
	s, proxy, h, err := b.readyWorld(ctx, watch)
	if err != nil {
		return r, err
	}
	defer func() { err = errors.Join(err, h.stop(), s.Close()) }()
	r.startup = h.startup

	direct := newDirect(proxy)
	defer direct.client.CloseIdleConnections()
	fl, err := startFloor(ctx, proxy)
	if err != nil {
		return r, err
	}
	defer func() { err = errors.Join(err, fl.stop()) }()
	viaFloor := newDirect(fl.base)
	defer viaFloor.client.CloseIdleConnections()
	viaHost := func(session string) (span, error) {
		reply, sp, err := h.ask(ctx, session, readyMessage)
		if err == nil && reply != "echo: "+readyMessage {
			err = fmt.Errorf("host: not the model's answer: %.100q", reply)
		}
		return sp, err
	}
	for i := range b.plan.warmup {
		if _, err := viaHost(fmt.Sprintf("r%d-w%d", run, i)); err != nil {
			return r, fmt.Errorf("warm-up: %w", err)
		}
		if _, err := direct.complete(ctx); err != nil {
			return r, fmt.Errorf("warm-up: %w", err)
		}
		if _, err := viaFloor.complete(ctx); err != nil {
			return r, fmt.Errorf("warm-up, floor: %w", err)
		}
	}
	var hostLat, directLat, floorLat []time.Duration
	for i := range b.plan.readyPairs {
		if ctx.Err() != nil {
			return r, ctx.Err()
		}
		// Rotate which goes first, so that none always runs on the
		// others' warm caches.
		for _, path := range rotate([]string{"host", "direct", "floor"}, i) {
			var sp span
			var err error
			mark := watch.mark()
			switch path {
			case "host":
				sp, err = viaHost(fmt.Sprintf("r%d-%d", run, i))
			case "floor":
				sp, err = viaFloor.complete(ctx)
			default:
				sp, err = direct.complete(ctx)
			}
			if err != nil {
				r.errs = append(r.errs, err)
				continue
			}
			r.legs.of(path).add(watch, mark, sp)
			switch path {
			case "host":
				hostLat = append(hostLat, sp.d())
			case "floor":
				floorLat = append(floorLat, sp.d())
			default:
				directLat = append(directLat, sp.d())
			}
		}
	}
	r.host, r.direct = latencyOf(hostLat), latencyOf(directLat)
	r.added = latency{r.host.p50 - r.direct.p50, r.host.p99 - r.direct.p99}
	r.floor = latencyOf(floorLat)
	r.floorAdded = latency{r.floor.p50 - r.direct.p50, r.floor.p99 - r.direct.p99}
	r.fp, err = h.footprint()
	return r, err
}

// readyWorld starts a simulator whose pod is woken and ready, its model's
// answers told to watch, and a host in front of it: measurements 2 and 6
// start from it. The caller stops both.
func (b *harness) readyWorld(ctx context.Context, watch *answerWatch) (*sim.Sim, string, *host, error) {
	cfg := readySim()
	cfg.OnAnswer = watch.observe
	s, err := startSim(cfg)
	if err != nil {
		return nil, "", nil, err
	}
	proxy, err := wakeSim(ctx, s)
	if err != nil {
		s.Close()
		return nil, "", nil, err
	}
	h, err := startHost(ctx, b.work, b.binDir, hostSpec{conductorURL: s.URL()})
	if err != nil {
		s.Close()
		return nil, "", nil, err
	}
	return s, proxy, h, nil
}

// wakeSim starts the simulator's pod directly and waits until its model
// answers. It returns the pod's proxy URL.
func wakeSim(ctx context.Context, s *sim.Sim) (string, error) {
	c := newClient()
	defer c.CloseIdleConnections()
	status, data, _, err := roundTrip(ctx, c, http.MethodPost, s.URL()+"/api/pods/"+sim.DefaultPod+"/start", nil, nil)
	if err != nil {
		return "", fmt.Errorf("starting the simulated pod: %w", err)
	}
	if status != http.StatusOK {
		return "", fmt.Errorf("starting the simulated pod: status %d: %.200s", status, data)
	}
	deadline := time.Now().Add(readyWithin)
	for time.Now().Before(deadline) {
		if v := s.Snapshot(sim.DefaultPod); v.ReadySince != "" && v.ProxyURL != "" {
			return v.ProxyURL, nil
		}
		time.Sleep(time.Millisecond)
	}
	return "", fmt.Errorf("the simulated pod was not ready within %v", readyWithin)
}

// direct calls the simulated model as the provider plugin does.
type direct struct {
	client *http.Client
	url    string
	body   []byte
	header http.Header
}

// newDirect prepares the completion the host sends for readyMessage on a new
// session: the model name, the system prompt and the message, with the same
// headers as the provider plugin.
func newDirect(proxy string) *direct {
	type message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	body, err := json.Marshal(struct {
		Model    string    `json:"model"`
		Messages []message `json:"messages"`
	}{"qwen", []message{{"system", systemPrompt}, {"user", readyMessage}}})
	if err != nil {
		panic(err) // a literal of plain strings
	}
	header := jsonHeader.Clone()
	header.Set("Authorization", "Bearer "+benchKey)
	return &direct{client: newClient(), url: proxy + "/v1/chat/completions", body: body, header: header}
}

// complete sends the completion and checks the answer.
func (d *direct) complete(ctx context.Context) (span, error) {
	status, data, sp, err := roundTrip(ctx, d.client, http.MethodPost, d.url, d.body, d.header)
	if err != nil {
		return span{}, fmt.Errorf("direct completion: %w", err)
	}
	if status != http.StatusOK {
		return span{}, fmt.Errorf("direct completion: status %d: %.200s", status, data)
	}
	var resp struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(data, &resp); err != nil || len(resp.Choices) == 0 || resp.Choices[0].Message.Content != "echo: "+readyMessage {
		return span{}, fmt.Errorf("direct completion: unexpected body %.200s", data)
	}
	return sp, nil
}

// rotate is paths turned left by i: the i-th pair of a run starts with
// path i mod len(paths).
func rotate(paths []string, i int) []string {
	k := i % len(paths)
	return slices.Concat(paths[k:], paths[:k])
}
