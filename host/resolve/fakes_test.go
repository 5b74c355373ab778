package resolve

import (
	"context"
	"errors"
	"sync"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// fakeGPU is a hand-written pluginapi.GPU: function fields say what it
// answers, and it records every call.
type fakeGPU struct {
	getPod   func(ctx context.Context, name string) (pluginapi.Pod, error)
	startPod func(ctx context.Context, name string) (pluginapi.StartResult, error)

	mu         sync.Mutex
	getNames   []string
	startNames []string
	stopNames  []string
}

var _ pluginapi.GPU = (*fakeGPU)(nil)

func (f *fakeGPU) GetPod(ctx context.Context, name string) (pluginapi.Pod, error) {
	f.mu.Lock()
	f.getNames = append(f.getNames, name)
	f.mu.Unlock()
	if f.getPod == nil {
		return pluginapi.Pod{}, errors.New("fake: GetPod not scripted")
	}
	return f.getPod(ctx, name)
}

func (f *fakeGPU) StartPod(ctx context.Context, name string) (pluginapi.StartResult, error) {
	f.mu.Lock()
	f.startNames = append(f.startNames, name)
	f.mu.Unlock()
	if f.startPod == nil {
		return pluginapi.StartResult{}, errors.New("fake: StartPod not scripted")
	}
	return f.startPod(ctx, name)
}

func (f *fakeGPU) StopPod(ctx context.Context, name string) (pluginapi.StartResult, error) {
	f.mu.Lock()
	f.stopNames = append(f.stopNames, name)
	f.mu.Unlock()
	return pluginapi.StartResult{}, errors.New("fake: StopPod not expected")
}

func (f *fakeGPU) getCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.getNames)
}

// resetCalls forgets the calls recorded so far (after priming a resolver).
func (f *fakeGPU) resetCalls() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.getNames, f.startNames, f.stopNames = nil, nil, nil
}

// podAnswer is one scripted GetPod answer.
type podAnswer struct {
	pod pluginapi.Pod
	err error
}

// podScript answers GetPod with answers in order; a call beyond them fails.
func podScript(answers ...podAnswer) func(context.Context, string) (pluginapi.Pod, error) {
	var mu sync.Mutex
	next := 0
	return func(context.Context, string) (pluginapi.Pod, error) {
		mu.Lock()
		defer mu.Unlock()
		if next >= len(answers) {
			return pluginapi.Pod{}, errors.New("fake: GetPod beyond script")
		}
		a := answers[next]
		next++
		return a.pod, a.err
	}
}

// fakeProvider is a hand-written pluginapi.Provider recording every endpoint
// it was asked to POST to and every request.
type fakeProvider struct {
	complete func(ctx context.Context, endpoint string, req pluginapi.CompletionRequest) (string, error)

	mu        sync.Mutex
	endpoints []string
	reqs      []pluginapi.CompletionRequest
}

var _ pluginapi.Provider = (*fakeProvider)(nil)

func (f *fakeProvider) Complete(ctx context.Context, endpoint string, req pluginapi.CompletionRequest) (string, error) {
	f.mu.Lock()
	f.endpoints = append(f.endpoints, endpoint)
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	if f.complete == nil {
		return "", errors.New("fake: Complete not scripted")
	}
	return f.complete(ctx, endpoint, req)
}

// answer is one scripted completion answer.
type answer struct {
	content string
	err     error
}

// answerScript answers Complete with answers in order; a call beyond them
// fails.
func answerScript(answers ...answer) func(context.Context, string, pluginapi.CompletionRequest) (string, error) {
	var mu sync.Mutex
	next := 0
	return func(context.Context, string, pluginapi.CompletionRequest) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		if next >= len(answers) {
			return "", errors.New("fake: Complete beyond script")
		}
		a := answers[next]
		next++
		return a.content, a.err
	}
}

// Pods the conductor reports in the tests.
const (
	oldProxy = "https://old-8000.proxy.example"
	newProxy = "https://new-8000.proxy.example"
	apiPath  = "/v1"
	oldURL   = oldProxy + apiPath
	newURL   = newProxy + apiPath
)

func running(proxy string) pluginapi.Pod {
	return pluginapi.Pod{Name: "qwen", Status: pluginapi.StatusRunning, IsRunning: true, ProxyURL: proxy, PodID: "abc", Lookup: pluginapi.LookupFound}
}

func exited() pluginapi.Pod {
	return pluginapi.Pod{Name: "qwen", Status: "EXITED", PodID: "abc", Lookup: pluginapi.LookupFound}
}

func failure(status int) answer {
	return answer{err: &pluginapi.CompletionError{Status: status, Message: "status from the fake"}}
}

var (
	transport = answer{err: &pluginapi.CompletionError{TransportFailure: true, Message: "connection reset"}}
	aborted   = answer{err: &pluginapi.CompletionError{Aborted: true, Message: "timed out after 120000 ms"}}
	badBody   = answer{err: &pluginapi.CompletionError{Status: 200, Message: "body did not parse"}}
	crashed   = answer{err: errors.New("plugin exited unexpectedly")}
)
