package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// requestTimeout caps every request the harness makes.
const requestTimeout = 30 * time.Second

// maxResponse bounds how much of a response the harness reads.
const maxResponse = 1 << 20

// newClient is an HTTP client for loopback load: no proxy, no compression,
// enough idle connections for a burst, a cap on every request.
func newClient() *http.Client {
	return &http.Client{
		Timeout: requestTimeout,
		Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			MaxIdleConns:        4096,
			MaxIdleConnsPerHost: 4096,
			IdleConnTimeout:     60 * time.Second,
			DisableCompression:  true,
		},
	}
}

// span is one request on the client's clock: when the client began to send
// it, and when it had the answer (all of it, or a stream's first byte).
type span struct{ sent, in time.Time }

// d is how long the span took.
func (s span) d() time.Duration { return s.in.Sub(s.sent) }

// roundTrip sends one request and reads the whole response. sp is from
// sending the request to having read the body; a non-2xx status is not an
// error here.
func roundTrip(ctx context.Context, c *http.Client, method, url string, body []byte, header http.Header) (status int, data []byte, sp span, err error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		return 0, nil, span{}, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	sp.sent = time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, span{}, err
	}
	data, err = io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	sp.in = time.Now()
	resp.Body.Close()
	return resp.StatusCode, data, sp, err
}

var jsonHeader = http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json"}}

// chatRequest is the body of POST /api/chat as a legacy client sends it.
type chatRequest struct {
	Message   string `json:"message"`
	SessionID string `json:"sessionId"`
}

type chatReply struct {
	Reply     string `json:"reply"`
	SessionID string `json:"sessionId"`
}

// ask sends one turn to the host and returns the reply and the round trip.
// Anything but a 200 with a non-empty reply is an error.
func (h *host) ask(ctx context.Context, session, message string) (string, span, error) {
	body, err := json.Marshal(chatRequest{Message: message, SessionID: session})
	if err != nil {
		return "", span{}, err
	}
	status, data, sp, err := roundTrip(ctx, h.client, http.MethodPost, h.base+"/api/chat", body, jsonHeader)
	if err != nil {
		return "", span{}, fmt.Errorf("POST /api/chat: %w", err)
	}
	if status != http.StatusOK {
		return "", sp, fmt.Errorf("POST /api/chat: status %d: %.200s", status, data)
	}
	var rep chatReply
	if err := json.Unmarshal(data, &rep); err != nil || rep.Reply == "" {
		return "", sp, fmt.Errorf("POST /api/chat: unexpected body %.200s", data)
	}
	return rep.Reply, sp, nil
}

// podReady reads GET /api/pods/qwen and reports its "ready".
func (h *host) podReady(ctx context.Context) (bool, error) {
	status, data, _, err := roundTrip(ctx, h.client, http.MethodGet, h.base+"/api/pods/qwen", nil, nil)
	if err != nil {
		return false, fmt.Errorf("GET /api/pods/qwen: %w", err)
	}
	if status != http.StatusOK {
		return false, fmt.Errorf("GET /api/pods/qwen: status %d: %.200s", status, data)
	}
	var v struct {
		Ready bool `json:"ready"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return false, fmt.Errorf("GET /api/pods/qwen: %w", err)
	}
	return v.Ready, nil
}

// load runs do(i) for i in [0, n) on conc workers and returns the
// durations of the calls that succeeded and the errors of those that did
// not. It stops handing out calls when ctx ends.
func load(ctx context.Context, n, conc int, do func(i int) (time.Duration, error)) ([]time.Duration, []error) {
	lat := make([]time.Duration, n)
	errs := make([]error, n)
	done := make([]bool, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(conc, n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				lat[i], errs[i] = do(i)
				done[i] = true
			}
		})
	}
	wg.Wait()
	var ok []time.Duration
	var failed []error
	for i := range n {
		switch {
		case !done[i]:
			failed = append(failed, fmt.Errorf("call %d not made: %w", i, context.Cause(ctx)))
		case errs[i] != nil:
			failed = append(failed, errs[i])
		default:
			ok = append(ok, lat[i])
		}
	}
	return ok, failed
}
