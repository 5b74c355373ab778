package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Measurement 6, the OpenAI-compatible door: each figure side by side with
// the same request sent straight to the simulated model in the same run.
//
//   - streaming time to first byte, and the relay's cost per chunk over a
//     200-chunk answer;
//   - doorConc concurrent streams of 200 chunks through the host: every
//     chunk in order and whole, and the CPU time the host and the provider
//     plugin spent per chunk;
//   - the non-streaming ready path;
//   - the sequential streams' first bytes and non-streaming answers split
//     at the model (trace.go).

// The targets (#18), beside readyAdded50/99 and floorRatio for the
// non-streaming path.
const (
	ttfbAdded50         = 300 * time.Microsecond
	ttfbAdded99         = 900 * time.Microsecond
	perChunkAddedTarget = 20 * time.Microsecond
)

// doorConc is how many streams run at once.
const doorConc = 64

// doorWords is the message: 199 words, which the simulated model answers
// as "echo: " and one chunk per word, 200 content chunks.
var doorWords = func() []string {
	w := make([]string, 199)
	for i := range w {
		w[i] = "w" + strconv.Itoa(i)
	}
	return w
}()

// doorChunks is the content chunks of the answer, in order.
var doorChunks = func() []string {
	c := []string{"echo: "}
	for i, w := range doorWords {
		if i < len(doorWords)-1 {
			w += " "
		}
		c = append(c, w)
	}
	return c
}()

func doorBody(stream bool) []byte {
	type message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	b, err := json.Marshal(struct {
		Model    string    `json:"model"`
		Stream   bool      `json:"stream,omitempty"`
		Messages []message `json:"messages"`
	}{"qwen", stream, []message{{"user", strings.Join(doorWords, " ")}}})
	if err != nil {
		panic(err) // plain strings
	}
	return b
}

// doorRun is one run of measurement 6.
type doorRun struct {
	ttfbHost, ttfbDirect, ttfbFloor    latency
	ttfbAdded, ttfbFloorAdded          latency       // host (floor) − direct, p50 and p99
	bodyHost, bodyDirect, bodyFloor    latency       // first byte → [DONE]
	perChunkAdded, perChunkFloorAdded  time.Duration // (p50 body host (floor) − p50 body direct) / chunks
	plainHost, plainDirect, plainFloor latency       // stream: false
	plainAdded, plainFloorAdded        latency
	streamLegs, plainLegs              pathLegs // split at the model: to the first byte; non-streaming
	concStreams, concWhole             int      // streams run at once; of them, every chunk whole and in order
	hostCPU, pluginCPU                 time.Duration
	concChunks                         int
	errs                               []error // the host's and the direct path's
	floorErrs                          int     // the floor's requests that failed
	startup                            time.Duration
}

// streamResult is one streamed answer as a client saw it.
type streamResult struct {
	head     span          // sent → the first byte
	body     time.Duration // the first byte → [DONE]
	contents []string      // each content delta, in order
	ids      map[string]bool
	whole    bool // every event a whole JSON chunk, ending in [DONE]
}

// stream sends body to url and reads the event stream to its end.
func stream(ctx context.Context, c *http.Client, url string, body []byte, header http.Header) (streamResult, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return streamResult{}, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	out := streamResult{ids: map[string]bool{}, whole: true}
	out.head.sent = time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return streamResult{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return streamResult{}, fmt.Errorf("status %d", resp.StatusCode)
	}
	r := bufio.NewReaderSize(resp.Body, 64<<10)
	for {
		line, err := r.ReadString('\n')
		if out.head.in.IsZero() && len(line) > 0 {
			out.head.in = time.Now()
		}
		if err != nil {
			return out, fmt.Errorf("the stream ended before [DONE]: %w", err)
		}
		line = strings.TrimSuffix(line, "\n")
		data, ok := strings.CutPrefix(line, "data: ")
		switch {
		case line == "" || strings.HasPrefix(line, ":"):
			continue
		case !ok:
			out.whole = false
			continue
		case data == "[DONE]":
			out.body = time.Since(out.head.in)
			// Read on to the body's end, as openai-python does, so that
			// the connection is reused: closed before it, the client drops
			// it and the next request pays a new one.
			if _, err := io.Copy(io.Discard, r); err != nil {
				return out, fmt.Errorf("after [DONE]: %w", err)
			}
			return out, nil
		}
		var ch struct {
			ID      string `json:"id"`
			Choices []struct {
				Delta struct {
					Content *string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if json.Unmarshal([]byte(data), &ch) != nil {
			out.whole = false
			continue
		}
		out.ids[ch.ID] = true
		if len(ch.Choices) == 1 && ch.Choices[0].Delta.Content != nil && *ch.Choices[0].Delta.Content != "" {
			out.contents = append(out.contents, *ch.Choices[0].Delta.Content)
		}
	}
}

// inOrder reports whether r carries exactly the expected chunks, in order,
// whole, under one id.
func (r streamResult) inOrder() bool {
	if !r.whole || len(r.ids) != 1 || len(r.contents) != len(doorChunks) {
		return false
	}
	for i, c := range doorChunks {
		if r.contents[i] != c {
			return false
		}
	}
	return true
}

// door runs measurement 6 once, on a fresh simulator and host with the pod
// ready.
func (b *harness) door(ctx context.Context, run int) (r doorRun, err error) {
	watch := &answerWatch{}
	s, proxy, h, err := b.readyWorld(ctx, watch)
	if err != nil {
		return r, err
	}
	defer func() { err = errors.Join(err, h.stop(), s.Close()) }()
	r.startup = h.startup

	directClient := newClient()
	defer directClient.CloseIdleConnections()
	directHeader := jsonHeader.Clone()
	directHeader.Set("Authorization", "Bearer "+benchKey)
	fl, err := startFloor(ctx, proxy)
	if err != nil {
		return r, err
	}
	defer func() { err = errors.Join(err, fl.stop()) }()
	floorClient := newClient()
	defer floorClient.CloseIdleConnections()
	directURL, hostURL, floorURL := proxy+"/v1/chat/completions", h.base+"/v1/chat/completions", fl.base+"/v1/chat/completions"
	streamBody, plainBody := doorBody(true), doorBody(false)
	// via is the client, URL and headers of each path: the floor is sent
	// what the model is, the key included, as a proxy that adds nothing.
	via := func(path string) (*http.Client, string, http.Header) {
		switch path {
		case "direct":
			return directClient, directURL, directHeader
		case "floor":
			return floorClient, floorURL, directHeader
		}
		return h.client, hostURL, jsonHeader
	}

	viaStream := func(path string) (streamResult, error) {
		c, url, hd := via(path)
		res, err := stream(ctx, c, url, streamBody, hd)
		if err != nil {
			err = fmt.Errorf("%s stream: %w", path, err)
		}
		if err == nil && !res.inOrder() {
			err = fmt.Errorf("%s stream: %d chunks, not the answer's %d in order", path, len(res.contents), len(doorChunks))
		}
		return res, err
	}
	viaPlain := func(path string) (span, error) {
		c, url, hd := via(path)
		status, data, sp, err := roundTrip(ctx, c, http.MethodPost, url, plainBody, hd)
		if err == nil && (status != http.StatusOK || !bytes.Contains(data, []byte(`"echo: w0 w1`))) {
			err = fmt.Errorf("%s completion: status %d: %.200s", path, status, data)
		}
		return sp, err
	}
	for range b.plan.warmup {
		for _, path := range []string{"host", "direct", "floor"} {
			// The floor is the measure, not the measured: a bare
			// ReverseProxy now and then cuts a stream whose client is
			// done with it; its failures are counted apart.
			if _, err := viaStream(path); err != nil && path != "floor" {
				return r, fmt.Errorf("warm-up: %w", err)
			}
			if _, err := viaPlain(path); err != nil && path != "floor" {
				return r, fmt.Errorf("warm-up: %w", err)
			}
		}
	}

	paths := []string{"host", "direct", "floor"}
	var ttfb, body, plain [3][]time.Duration // by path, in paths' order
	for i := range b.plan.doorPairs {
		if ctx.Err() != nil {
			return r, ctx.Err()
		}
		for _, path := range rotate(paths, i) {
			k := slices.Index(paths, path)
			mark := watch.mark()
			if res, err := viaStream(path); err != nil && path == "floor" {
				r.floorErrs++
			} else if err != nil {
				r.errs = append(r.errs, err)
			} else {
				ttfb[k], body[k] = append(ttfb[k], res.head.d()), append(body[k], res.body)
				r.streamLegs.of(path).add(watch, mark, res.head)
			}
			mark = watch.mark()
			if sp, err := viaPlain(path); err != nil && path == "floor" {
				r.floorErrs++
			} else if err != nil {
				r.errs = append(r.errs, err)
			} else {
				plain[k] = append(plain[k], sp.d())
				r.plainLegs.of(path).add(watch, mark, sp)
			}
		}
	}
	added := func(a, d latency) latency { return latency{a.p50 - d.p50, a.p99 - d.p99} }
	chunks := time.Duration(len(doorChunks))
	r.ttfbHost, r.ttfbDirect, r.ttfbFloor = latencyOf(ttfb[0]), latencyOf(ttfb[1]), latencyOf(ttfb[2])
	r.ttfbAdded, r.ttfbFloorAdded = added(r.ttfbHost, r.ttfbDirect), added(r.ttfbFloor, r.ttfbDirect)
	r.bodyHost, r.bodyDirect, r.bodyFloor = latencyOf(body[0]), latencyOf(body[1]), latencyOf(body[2])
	r.perChunkAdded = (r.bodyHost.p50 - r.bodyDirect.p50) / chunks
	r.perChunkFloorAdded = (r.bodyFloor.p50 - r.bodyDirect.p50) / chunks
	r.plainHost, r.plainDirect, r.plainFloor = latencyOf(plain[0]), latencyOf(plain[1]), latencyOf(plain[2])
	r.plainAdded, r.plainFloorAdded = added(r.plainHost, r.plainDirect), added(r.plainFloor, r.plainDirect)

	// doorConc streams at once, and the CPU time they cost.
	hostPID := h.cmd.Process.Pid
	kids, err := children(hostPID)
	if err != nil {
		return r, err
	}
	pluginPID := kids[providerPlugin]
	h0, p0 := cpuTime(hostPID), cpuTime(pluginPID)
	results := make([]streamResult, doorConc)
	errs := make([]error, doorConc)
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i := range doorConc {
		wg.Go(func() {
			<-gate
			results[i], errs[i] = viaStream("host")
		})
	}
	close(gate)
	wg.Wait()
	h1, p1 := cpuTime(hostPID), cpuTime(pluginPID)
	r.concStreams = doorConc
	ids := map[string]bool{}
	for i, res := range results {
		if errs[i] != nil {
			r.errs = append(r.errs, fmt.Errorf("concurrent stream %d: %w", i, errs[i]))
			continue
		}
		for id := range res.ids {
			ids[id] = true
		}
		r.concWhole++
		r.concChunks += len(res.contents)
	}
	if len(ids) != r.concWhole {
		r.errs = append(r.errs, fmt.Errorf("%d concurrent streams carried %d distinct ids", r.concWhole, len(ids)))
		r.concWhole = 0
	}
	r.hostCPU, r.pluginCPU = h1-h0, p1-p0
	return r, nil
}

// cpuTime is the user and system CPU time process pid has used, from
// /proc/PID/stat (in clock ticks of 10 ms); 0 when it cannot be read.
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := statFields(b) // state ppid ... utime (12th) stime (13th)
	if len(f) < 13 {
		return 0
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// doorRows are measurement 6's rows.
func doorRows(p plan, runs []doorRun) []row {
	var th, td, tf, bh, bd, bf, ph, pd, pf, tAdded, tFloor, pAdded, pFloor []latency
	var cAdded, cFloor, hostCPU, pluginCPU []time.Duration
	var errs []error
	var streamSplit, plainSplit legRuns
	whole, streams, floorErrs := 0, 0, 0
	for _, r := range runs {
		floorErrs += r.floorErrs
		streamSplit.add(r.streamLegs)
		plainSplit.add(r.plainLegs)
		th, td, tf = append(th, r.ttfbHost), append(td, r.ttfbDirect), append(tf, r.ttfbFloor)
		bh, bd, bf = append(bh, r.bodyHost), append(bd, r.bodyDirect), append(bf, r.bodyFloor)
		ph, pd, pf = append(ph, r.plainHost), append(pd, r.plainDirect), append(pf, r.plainFloor)
		tAdded, tFloor = append(tAdded, r.ttfbAdded), append(tFloor, r.ttfbFloorAdded)
		pAdded, pFloor = append(pAdded, r.plainAdded), append(pFloor, r.plainFloorAdded)
		cAdded, cFloor = append(cAdded, r.perChunkAdded), append(cFloor, r.perChunkFloorAdded)
		if r.concChunks > 0 {
			hostCPU = append(hostCPU, r.hostCPU/time.Duration(r.concChunks))
			pluginCPU = append(pluginCPU, r.pluginCPU/time.Duration(r.concChunks))
		}
		whole, streams = whole+r.concWhole, streams+r.concStreams
		errs = append(errs, r.errs...)
	}
	clean := len(errs) == 0
	n := len(doorChunks)
	three := func(h, d, f []latency) string {
		mh, md, mf := medianLatency(h), medianLatency(d), medianLatency(f)
		return fmt.Sprintf("%s / %s; direct %s / %s; floor %s / %s", ms(mh.p50), ms(mh.p99), ms(md.p50), ms(md.p99), ms(mf.p50), ms(mf.p99))
	}
	pair := func(l latency) string { return us(l.p50) + " / " + us(l.p99) }
	within := func(host, floor time.Duration) bool { return floor > 0 && float64(host) <= floorRatio*float64(floor) }
	ta, tfl, pa, pfl := medianLatency(tAdded), medianLatency(tFloor), medianLatency(pAdded), medianLatency(pFloor)
	rows := slices.Concat([]row{
		{"6", fmt.Sprintf("streaming, time to first byte through POST /v1/chat/completions / straight to the model / through the floor (%d triples of %d-chunk answers, interleaved): p50 / p99", p.doorPairs, n),
			three(th, td, tf), noTarget, noTarget},
		{"6", "streaming: time to first byte added by the host / by the floor (− direct, per run): p50 / p99",
			pair(ta) + "; floor " + pair(tfl), "host < 0.3 / 0.9 ms", verdict(clean && ta.p50 < ttfbAdded50 && ta.p99 < ttfbAdded99)},
		{"6", "streaming: time to first byte added by the host, as a multiple of the floor's at p50",
			ratio(ta.p50, tfl.p50), "≤ 2.5×", verdict(clean && within(ta.p50, tfl.p50))},
	}, streamSplit.rows("6", "streaming, to the first byte", firstLegs), []row{
		{"6", fmt.Sprintf("streaming: first byte → [DONE] through the host / direct / the floor: p50 (%d chunks)", n),
			fmt.Sprintf("%s / %s / %s", ms(medianLatency(bh).p50), ms(medianLatency(bd).p50), ms(medianLatency(bf).p50)), noTarget, noTarget},
		{"6", "streaming: relay added per chunk by the host / by the floor ((p50 − p50 direct) / chunks, per run)",
			us(median(cAdded)) + " / " + us(median(cFloor)), "host < 20 µs", verdict(clean && median(cAdded) < perChunkAddedTarget)},
		{"6", fmt.Sprintf("%d concurrent streams of %d chunks through the host: streams with every chunk whole, in order, under one id of its own", doorConc, n),
			fmt.Sprintf("%d of %d", whole, streams), "all", verdict(clean && whole == streams)},
		{"6", "… CPU time per chunk relayed: wakehost / wake-plugin-provider-openai (from /proc, 10 ms ticks)",
			fmt.Sprintf("%d µs / %d µs", median(hostCPU)/time.Microsecond, median(pluginCPU)/time.Microsecond), noTarget, noTarget},
		{"6", "non-streaming ready path through POST /v1/chat/completions / direct / the floor: p50 / p99",
			three(ph, pd, pf), noTarget, noTarget},
		{"6", "non-streaming: added by the host / by the floor (− direct, per run): p50 / p99",
			pair(pa) + "; floor " + pair(pfl), "host < 0.35 / 1.0 ms", verdict(clean && pa.p50 < readyAdded50 && pa.p99 < readyAdded99)},
		{"6", "non-streaming: added by the host, as a multiple of the floor's at p50",
			ratio(pa.p50, pfl.p50), "≤ 2.5×", verdict(clean && within(pa.p50, pfl.p50))},
	}, plainSplit.rows("6", "non-streaming", wholeLegs), []row{
		{"6", "floor requests that failed (a bare ReverseProxy's, not the host's: counted apart)",
			fmt.Sprintf("%d of %d", floorErrs, len(runs)*2*p.doorPairs), noTarget, noTarget},
	})
	return append(rows, errorRows("6", "door requests (host and direct)", errs, len(runs)*(4*p.doorPairs+doorConc))...)
}
