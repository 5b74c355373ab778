package pluginapi

import "context"

// ProbeResult is the outcome of a Probe: whether the model answered. It is
// never an error: a model that does not answer yet is what a probe is for.
type ProbeResult struct {
	// Answered is true when the model API answered the probe: the model is
	// loaded and serving. Nothing else counts (a gateway page, a 200 that
	// is not the API's answer, a 401).
	Answered bool
	// Status is the HTTP status the model API answered, 0 when there was
	// none.
	Status int
	// TransportFailure is true only when the request got no response at
	// all. A timeout is not a transport failure.
	TransportFailure bool
	// Aborted is true when the time cap or the caller's ctx cut the
	// request.
	Aborted bool
	// Message says, when the model did not answer, why, in a few words
	// without URLs or secrets: "HTTP 502 Bad Gateway", "no response:
	// ECONNREFUSED" (see ErrorClass), "timed out after 1s".
	Message string
}

// Prober is the call protocol 3 adds to the Provider kind. A plugin's
// Provider must also be a Prober: the host probes a waking pod's model
// through it, about once a second, until the model answers.
type Prober interface {
	// Probe makes the cheapest request that proves the model behind
	// endpoint (a base URL such as https://host/v1) answers, once, and
	// never retries: for an OpenAI-compatible server, GET
	// {endpoint}/models with the API key (vLLM serves no API until its
	// engine is up). It must not run the model and should not count as a
	// use of it. It honours ctx's deadline (the host caps each probe at
	// its probe interval) and applies its own cap on top. Every outcome is
	// a ProbeResult, classified like a completion's failure; implementations
	// return a nil error.
	Probe(ctx context.Context, endpoint string) (ProbeResult, error)
}
