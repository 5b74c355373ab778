// Command testplugin is a GPU and Provider plugin for the supervisor's
// tests. Its behaviour is chosen by the pod name or the model:
//
//	GetPod "env"        Status: the sorted names of its environment variables
//	GetPod "args"       Status: its arguments, joined by spaces
//	GetPod "pid"        PodID: its process id
//	GetPod "crash"      exits mid-call
//	GetPod "crash-once" exits mid-call unless $TESTPLUGIN_DIR/crashed exists (it creates it)
//	GetPod "hang"       never answers
//	GetPod "log"        logs $TESTPLUGIN_SECRET at warn, in the message and in attributes
//	GetPod "fail"       a LookupError that carries $TESTPLUGIN_SECRET
//	GetPod other        a running pod
//	StartPod/StopPod "crash" exits mid-call; "broken" returns an error; else accepted (202)
//	Complete model "crash" exits mid-call; else "echo: " + the last message
//	Stream   model "size" answers that many bytes, the last message's
//	         content in decimal, made as they are read; else Complete's
//	         answer
//	Route    endpoint ".../crash" exits mid-call; ".../plugin" no route; else
//	         direct to the endpoint with header X-Test: $TESTPLUGIN_SECRET
//	Probe endpoint ".../crash" exits mid-call; ".../hang" never answers;
//	         ".../broken" returns an error; ".../loading" is not answered, with
//	         $TESTPLUGIN_SECRET in its message; else answered
package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

type gpu struct{ log hclog.Logger }

func (g gpu) GetPod(ctx context.Context, name string) (pluginapi.Pod, error) {
	switch name {
	case "env":
		var keys []string
		for _, kv := range os.Environ() {
			k, _, _ := strings.Cut(kv, "=")
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return pluginapi.Pod{Name: name, Status: strings.Join(keys, ",")}, nil
	case "args":
		return pluginapi.Pod{Name: name, Status: strings.Join(os.Args[1:], " ")}, nil
	case "loglevel":
		return pluginapi.Pod{Name: name, Status: os.Getenv(pluginapi.EnvLogLevel)}, nil
	case "pid":
		return pluginapi.Pod{Name: name, PodID: strconv.Itoa(os.Getpid())}, nil
	case "crash":
		os.Exit(3)
	case "crash-once":
		marker := filepath.Join(os.Getenv("TESTPLUGIN_DIR"), "crashed")
		if _, err := os.Stat(marker); err != nil {
			_ = os.WriteFile(marker, nil, 0o600)
			os.Exit(3)
		}
		return pluginapi.Pod{Name: name, Status: "RUNNING", IsRunning: true, Lookup: pluginapi.LookupFound}, nil
	case "hang":
		// Never answer, not even after ctx ends: the host must give up on
		// its own deadline.
		<-ctx.Done()
		select {}
	case "log":
		secret := os.Getenv("TESTPLUGIN_SECRET")
		g.log.Warn("the secret is "+secret, "secret", secret, "nested", map[string]any{"list": []string{"x", secret}}, "count", 3)
		return pluginapi.Pod{Name: name}, nil
	case "fail":
		return pluginapi.Pod{}, &pluginapi.LookupError{Status: 500, Message: "failed with " + os.Getenv("TESTPLUGIN_SECRET")}
	}
	return pluginapi.Pod{Name: name, Status: "RUNNING", IsRunning: true, Lookup: pluginapi.LookupFound}, nil
}

func (g gpu) StartPod(_ context.Context, name string) (pluginapi.StartResult, error) {
	switch name {
	case "crash":
		os.Exit(3)
	case "broken":
		return pluginapi.StartResult{}, errors.New("broken on purpose")
	}
	return pluginapi.StartResult{Requested: true, Status: 202}, nil
}

func (g gpu) StopPod(ctx context.Context, name string) (pluginapi.StartResult, error) {
	return g.StartPod(ctx, name)
}

type provider struct{}

func (provider) Complete(_ context.Context, _ string, req pluginapi.CompletionRequest) (string, error) {
	if req.Model == "crash" {
		os.Exit(3)
	}
	if len(req.Messages) == 0 {
		return "", &pluginapi.CompletionError{Status: 400, Message: "HTTP 400: no messages"}
	}
	return "echo: " + req.Messages[len(req.Messages)-1].Content, nil
}

// Stream answers model "size" itself: the answer, larger than the host
// takes in, is made as the plugin server reads it, rather than built in
// memory (and copied five times) by pluginapi.StreamFromComplete. Every
// other model goes through Complete, as a Provider that is no Streamer.
func (p provider) Stream(ctx context.Context, req pluginapi.StreamRequest) (*pluginapi.StreamResponse, error) {
	var in struct {
		Model    string
		Messages []struct{ Content string }
	}
	if json.Unmarshal(req.Body, &in) != nil || in.Model != "size" || len(in.Messages) == 0 {
		return pluginapi.StreamFromComplete(p).Stream(ctx, req)
	}
	n, err := strconv.Atoi(in.Messages[len(in.Messages)-1].Content)
	if err != nil {
		return nil, &pluginapi.CompletionError{Status: 400, Message: "HTTP 400: not a size"}
	}
	body := io.MultiReader(
		strings.NewReader(`{"choices":[{"index":0,"message":{"role":"assistant","content":"`),
		io.LimitReader(xs{}, int64(n)),
		strings.NewReader(`"},"finish_reason":"stop"}]}`))
	return &pluginapi.StreamResponse{Status: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(body)}, nil
}

// xs reads as an endless run of "x".
type xs struct{}

func (xs) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

func (provider) Probe(ctx context.Context, endpoint string) (pluginapi.ProbeResult, error) {
	switch endpoint[strings.LastIndex(endpoint, "/")+1:] {
	case "crash":
		os.Exit(3)
	case "hang":
		<-ctx.Done()
		select {}
	case "broken":
		return pluginapi.ProbeResult{}, errors.New("broken on purpose")
	case "loading":
		return pluginapi.ProbeResult{Status: 502, Message: "HTTP 502 from " + os.Getenv("TESTPLUGIN_SECRET")}, nil
	}
	return pluginapi.ProbeResult{Answered: true, Status: 200}, nil
}

func (provider) Route(_ context.Context, endpoint string) (pluginapi.Route, error) {
	switch endpoint[strings.LastIndex(endpoint, "/")+1:] {
	case "crash":
		os.Exit(3)
	case "plugin":
		return pluginapi.Route{}, pluginapi.ErrNoRoute
	}
	return pluginapi.Route{Direct: true, BaseURL: endpoint, Timeout: 7 * time.Second,
		Header: http.Header{"X-Test": {os.Getenv("TESTPLUGIN_SECRET")}}}, nil
}

func main() {
	logger := pluginapi.NewLogger()
	pluginapi.Serve(map[string]plugin.Plugin{
		pluginapi.KindGPU:      &pluginapi.GPUPlugin{Impl: gpu{log: logger}},
		pluginapi.KindProvider: &pluginapi.ProviderPlugin{Impl: provider{}},
	}, logger)
}
