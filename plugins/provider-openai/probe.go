package openai

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// ProbeTimeout caps one probe when the host's deadline is later (the host
// caps each probe at its probe interval, 1 s by default).
const ProbeTimeout = 10 * time.Second

// maxModelList is the part of a model list that is read: vLLM lists one
// model, OpenAI itself about a hundred in some 10 KiB.
const maxModelList = 1 << 20

var _ pluginapi.Prober = (*Client)(nil)

// Probe asks the model API at endpoint whether it answers: one GET
// {endpoint}/models with the API key, which vLLM answers only once its
// engine is up and which runs no model. It is answered when the model API
// answers 200 with a model list ({"data": [...]}); otherwise the result
// says why, classified like a completion's failure:
//
//   - the model API (or the proxy in front of it) answered another status:
//     Status and Message "HTTP 502 Bad Gateway", or "HTTP 401: <the JSON
//     error message>" (the key redacted);
//   - a 200 that is not a model list: Status 200, Message "HTTP 200 without
//     a model list";
//   - no response at all: TransportFailure, Message "no response:
//     ECONNREFUSED";
//   - the cap (ProbeTimeout, or ctx's earlier deadline) or ctx cut it:
//     Aborted, Message "timed out after 1s" or "canceled".
//
// The error is always nil.
func (c *Client) Probe(ctx context.Context, endpoint string) (pluginapi.ProbeResult, error) {
	began := time.Now()
	r := c.probe(ctx, endpoint)
	c.log.Debug("probe", "answered", r.Answered, "status", r.Status, "transport_failure", r.TransportFailure,
		"aborted", r.Aborted, "reason", r.Message, "duration_ms", time.Since(began).Milliseconds())
	return r, nil
}

func (c *Client) probe(ctx context.Context, endpoint string) pluginapi.ProbeResult {
	target, err := pluginapi.APIURL(endpoint, "/models")
	if err != nil {
		return pluginapi.ProbeResult{Message: err.Error()}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return pluginapi.ProbeResult{Message: "build request: " + pluginapi.ErrorClass(err)}
	}
	req.Header.Set("Accept", "application/json")
	c.authorize(req.Header)
	a, err := pluginapi.Fetch(c.http, req, ProbeTimeout, maxModelList)
	var fe *pluginapi.FetchError
	errors.As(err, &fe)
	switch {
	case a.Status != 0 && a.Status != http.StatusOK:
		// The status is the answer: only the start of the body is looked
		// at, whether or not the rest arrived.
		body := a.Body[:min(len(a.Body), maxErrorBody)]
		return pluginapi.ProbeResult{Status: a.Status, Message: pluginapi.StatusMessage(a.Status, body, c.secrets())}
	case fe != nil && (fe.Canceled || fe.TimedOut):
		return pluginapi.ProbeResult{Status: a.Status, Aborted: true, Message: fe.Error()}
	case fe != nil && a.Status == 0:
		return pluginapi.ProbeResult{TransportFailure: true, Message: fe.Error()}
	case fe != nil && !fe.TooLarge:
		return pluginapi.ProbeResult{Status: http.StatusOK, Message: fe.Error()}
	case fe != nil || !isModelList(a.Body):
		return pluginapi.ProbeResult{Status: http.StatusOK, Message: "HTTP 200 without a model list"}
	}
	return pluginapi.ProbeResult{Answered: true, Status: http.StatusOK}
}

// isModelList reports whether body is an OpenAI model list: a JSON object
// whose "data" is an array. A page a proxy serves with 200 is not one.
func isModelList(body []byte) bool {
	var list struct {
		Data []json.RawMessage `json:"data"`
	}
	return len(body) <= maxModelList && json.Unmarshal(body, &list) == nil && list.Data != nil
}
