// Command faultplugin is the fault matrix's GPU and Provider plugin. It is
// the real conductor client and the real OpenAI-compatible client, each
// given an HTTP transport that obeys an X-Fault header on the answer it
// receives, so that a row's test server can make the plugin fail mid-call:
//
//	X-Fault: crash   the plugin process exits (status 3) before it answers
//	X-Fault: hang    the plugin never answers the call, whatever its ctx says
//
// Without the header it behaves exactly like wake-plugin-conductor and
// wake-plugin-provider-openai, and it reads the same environment, but for
// one thing: as a provider it gives no route (protocol 4), so that every
// completion goes through it, as through a plugin that translates, and its
// faults happen mid-call. It serves both plugin kinds; the host dispenses
// the one it launched it for.
package main

import (
	"context"
	"errors"
	"net/http"
	"os"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/wakeonchat/wakeonchat/plugins/conductor"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
	openai "github.com/wakeonchat/wakeonchat/plugins/provider-openai"
)

// faultTransport makes the request, then obeys the answer's X-Fault header.
type faultTransport struct{ base http.RoundTripper }

func (f faultTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := f.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	switch resp.Header.Get("X-Fault") {
	case "crash":
		os.Exit(3)
	case "hang":
		select {} // never answer, not even when the call's ctx ends
	}
	return resp, nil
}

func httpClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	return &http.Client{
		Transport:     faultTransport{base: t},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// unconfigured is the GPU of a process launched as a provider (it has no
// conductor URL); the host never dispenses it.
type unconfigured struct{}

var errUnconfigured = errors.New("faultplugin: launched without WAKE_CONDUCTOR_URL")

func (unconfigured) GetPod(context.Context, string) (pluginapi.Pod, error) {
	return pluginapi.Pod{}, errUnconfigured
}

func (unconfigured) StartPod(context.Context, string) (pluginapi.StartResult, error) {
	return pluginapi.StartResult{Error: "unconfigured"}, nil
}

func (unconfigured) StopPod(context.Context, string) (pluginapi.StartResult, error) {
	return pluginapi.StartResult{Error: "unconfigured"}, nil
}

func gpu(logger hclog.Logger) (pluginapi.GPU, error) {
	url := os.Getenv(pluginapi.EnvConductorURL)
	if url == "" {
		return unconfigured{}, nil
	}
	cfg := conductor.Config{
		URL: url, Token: conductor.Token(os.Getenv(pluginapi.EnvWakeToken)),
		HTTPClient: httpClient(), Logger: logger,
	}
	var err error
	if cfg.LookupTimeout, err = pluginapi.DurationEnv(pluginapi.EnvLookupTimeout, conductor.DefaultLookupTimeout); err != nil {
		return nil, err
	}
	if cfg.StartTimeout, err = pluginapi.DurationEnv(pluginapi.EnvStartTimeout, conductor.DefaultStartTimeout); err != nil {
		return nil, err
	}
	return conductor.New(cfg)
}

// throughPlugin is the OpenAI client without its Route: its completions
// cross the plugin.
type throughPlugin struct{ c *openai.Client }

func (p throughPlugin) Complete(ctx context.Context, endpoint string, req pluginapi.CompletionRequest) (string, error) {
	return p.c.Complete(ctx, endpoint, req)
}

func (p throughPlugin) Stream(ctx context.Context, req pluginapi.StreamRequest) (*pluginapi.StreamResponse, error) {
	return p.c.Stream(ctx, req)
}

func (p throughPlugin) Probe(ctx context.Context, endpoint string) (pluginapi.ProbeResult, error) {
	return p.c.Probe(ctx, endpoint)
}

func provider(logger hclog.Logger) (pluginapi.Provider, error) {
	timeout, err := pluginapi.DurationEnv(pluginapi.EnvCompletionTimeout, openai.DefaultTimeout)
	if err != nil {
		return nil, err
	}
	c, err := openai.New(openai.Config{
		APIKey: openai.APIKey(pluginapi.APIKeyFromEnv()), Timeout: timeout,
		HTTPClient: httpClient(), Logger: logger,
	})
	if err != nil {
		return nil, err
	}
	return throughPlugin{c}, nil
}

func main() {
	logger := pluginapi.NewLogger()
	g, err := gpu(logger)
	var p pluginapi.Provider
	if err == nil {
		p, err = provider(logger)
	}
	if err != nil {
		logger.Error("invalid configuration", "error", err)
		os.Exit(1)
	}
	pluginapi.Serve(map[string]plugin.Plugin{
		pluginapi.KindGPU:      &pluginapi.GPUPlugin{Impl: g},
		pluginapi.KindProvider: &pluginapi.ProviderPlugin{Impl: p},
	}, logger)
}
