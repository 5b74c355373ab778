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
//   - the non-streaming ready path.

// The targets.
const (
	ttfbAddedTarget     = time.Millisecond
	perChunkAddedTarget = 50 * time.Microsecond
	nonStreamTarget     = 500 * time.Microsecond
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
	ttfbHost, ttfbDirect   latency
	ttfbAdded              time.Duration // p50 host − p50 direct
	bodyHost, bodyDirect   latency       // first byte → [DONE]
	perChunkAdded          time.Duration // (p50 body host − p50 body direct) / chunks
	plainHost, plainDirect latency       // stream: false
	plainAdded             time.Duration
	concStreams, concWhole int // streams run at once; of them, every chunk whole and in order
	hostCPU, pluginCPU     time.Duration
	concChunks             int
	errs                   []error
	startup                time.Duration
}

// streamResult is one streamed answer as a client saw it.
type streamResult struct {
	ttfb, body time.Duration
	contents   []string // each content delta, in order
	ids        map[string]bool
	whole      bool // every event a whole JSON chunk, ending in [DONE]
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
	t0 := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return streamResult{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return streamResult{}, fmt.Errorf("status %d", resp.StatusCode)
	}
	r := bufio.NewReaderSize(resp.Body, 64<<10)
	out := streamResult{ids: map[string]bool{}, whole: true}
	var first time.Time
	for {
		line, err := r.ReadString('\n')
		if first.IsZero() && len(line) > 0 {
			first = time.Now()
			out.ttfb = first.Sub(t0)
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
			out.body = time.Since(first)
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
	s, proxy, h, err := b.readyWorld(ctx)
	if err != nil {
		return r, err
	}
	defer func() { err = errors.Join(err, h.stop(), s.Close()) }()
	r.startup = h.startup

	directClient := newClient()
	defer directClient.CloseIdleConnections()
	directHeader := jsonHeader.Clone()
	directHeader.Set("Authorization", "Bearer "+benchKey)
	directURL, hostURL := proxy+"/v1/chat/completions", h.base+"/v1/chat/completions"
	streamBody, plainBody := doorBody(true), doorBody(false)

	viaStream := func(path string) (streamResult, error) {
		c, url, hd := h.client, hostURL, jsonHeader
		if path == "direct" {
			c, url, hd = directClient, directURL, directHeader
		}
		res, err := stream(ctx, c, url, streamBody, hd)
		if err == nil && !res.inOrder() {
			err = fmt.Errorf("%s stream: %d chunks, not the answer's %d in order", path, len(res.contents), len(doorChunks))
		}
		return res, err
	}
	viaPlain := func(path string) (time.Duration, error) {
		c, url, hd := h.client, hostURL, jsonHeader
		if path == "direct" {
			c, url, hd = directClient, directURL, directHeader
		}
		status, data, d, err := roundTrip(ctx, c, http.MethodPost, url, plainBody, hd)
		if err == nil && (status != http.StatusOK || !bytes.Contains(data, []byte(`"echo: w0 w1`))) {
			err = fmt.Errorf("%s completion: status %d: %.200s", path, status, data)
		}
		return d, err
	}
	for range b.plan.warmup {
		for _, path := range []string{"host", "direct"} {
			if _, err := viaStream(path); err != nil {
				return r, fmt.Errorf("warm-up: %w", err)
			}
			if _, err := viaPlain(path); err != nil {
				return r, fmt.Errorf("warm-up: %w", err)
			}
		}
	}

	var ttfb, body, plain [2][]time.Duration // host, direct
	for i := range b.plan.doorPairs {
		if ctx.Err() != nil {
			return r, ctx.Err()
		}
		order := []string{"host", "direct"}
		if i%2 == 1 {
			order = []string{"direct", "host"}
		}
		for _, path := range order {
			k := 0
			if path == "direct" {
				k = 1
			}
			if res, err := viaStream(path); err != nil {
				r.errs = append(r.errs, err)
			} else {
				ttfb[k], body[k] = append(ttfb[k], res.ttfb), append(body[k], res.body)
			}
			if d, err := viaPlain(path); err != nil {
				r.errs = append(r.errs, err)
			} else {
				plain[k] = append(plain[k], d)
			}
		}
	}
	r.ttfbHost, r.ttfbDirect = latencyOf(ttfb[0]), latencyOf(ttfb[1])
	r.ttfbAdded = r.ttfbHost.p50 - r.ttfbDirect.p50
	r.bodyHost, r.bodyDirect = latencyOf(body[0]), latencyOf(body[1])
	r.perChunkAdded = (r.bodyHost.p50 - r.bodyDirect.p50) / time.Duration(len(doorChunks))
	r.plainHost, r.plainDirect = latencyOf(plain[0]), latencyOf(plain[1])
	r.plainAdded = r.plainHost.p50 - r.plainDirect.p50

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
	var th, td, bh, bd, ph, pd []latency
	var tAdded, cAdded, pAdded, hostCPU, pluginCPU []time.Duration
	var errs []error
	whole, streams := 0, 0
	for _, r := range runs {
		th, td, bh, bd, ph, pd = append(th, r.ttfbHost), append(td, r.ttfbDirect), append(bh, r.bodyHost), append(bd, r.bodyDirect),
			append(ph, r.plainHost), append(pd, r.plainDirect)
		tAdded, cAdded, pAdded = append(tAdded, r.ttfbAdded), append(cAdded, r.perChunkAdded), append(pAdded, r.plainAdded)
		if r.concChunks > 0 {
			hostCPU = append(hostCPU, r.hostCPU/time.Duration(r.concChunks))
			pluginCPU = append(pluginCPU, r.pluginCPU/time.Duration(r.concChunks))
		}
		whole, streams = whole+r.concWhole, streams+r.concStreams
		errs = append(errs, r.errs...)
	}
	clean := len(errs) == 0
	n := len(doorChunks)
	rows := []row{
		{"6", fmt.Sprintf("streaming, time to first byte through POST /v1/chat/completions / straight to the model (%d pairs of %d-chunk answers, interleaved): p50 / p99", p.doorPairs, n),
			fmt.Sprintf("%s / %s; direct %s / %s", ms(medianLatency(th).p50), ms(medianLatency(th).p99), ms(medianLatency(td).p50), ms(medianLatency(td).p99)), noTarget, noTarget},
		{"6", "streaming: time to first byte added by the host (p50 host − p50 direct, per run)",
			us(median(tAdded)), "p50 < 1 ms", verdict(clean && median(tAdded) < ttfbAddedTarget)},
		{"6", fmt.Sprintf("streaming: first byte → [DONE] through the host / direct: p50 (%d chunks)", n),
			fmt.Sprintf("%s / %s", ms(medianLatency(bh).p50), ms(medianLatency(bd).p50)), noTarget, noTarget},
		{"6", "streaming: relay added per chunk ((p50 host − p50 direct) / chunks, per run)",
			us(median(cAdded)), "p50 < 50 µs", verdict(clean && median(cAdded) < perChunkAddedTarget)},
		{"6", fmt.Sprintf("%d concurrent streams of %d chunks through the host: streams with every chunk whole, in order, under one id of its own", doorConc, n),
			fmt.Sprintf("%d of %d", whole, streams), "all", verdict(clean && whole == streams)},
		{"6", "… CPU time per chunk relayed: wakehost / wake-plugin-provider-openai (from /proc, 10 ms ticks)",
			fmt.Sprintf("%d µs / %d µs", median(hostCPU)/time.Microsecond, median(pluginCPU)/time.Microsecond), noTarget, noTarget},
		{"6", "non-streaming ready path through POST /v1/chat/completions / direct: p50 / p99",
			fmt.Sprintf("%s / %s; direct %s / %s", ms(medianLatency(ph).p50), ms(medianLatency(ph).p99), ms(medianLatency(pd).p50), ms(medianLatency(pd).p99)), noTarget, noTarget},
		{"6", "non-streaming: added by the host (p50 host − p50 direct, per run)",
			us(median(pAdded)), "p50 < 0.5 ms", verdict(clean && median(pAdded) < nonStreamTarget)},
	}
	return append(rows, errorRows("6", "door requests", errs, len(runs)*(4*p.doorPairs+doorConc))...)
}
