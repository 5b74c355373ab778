package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wakeonchat/wakeonchat/host/app"
)

// NewApp runs app.New within 10 s and turns a panic into a value, so that a
// test can tell a start-up error from a crash.
func NewApp(o app.Options) (a *app.App, err error, panicked any) {
	defer func() { panicked = recover() }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, err = app.New(ctx, o)
	return a, err, nil
}

// Host is an app.App serving in the test's process, and the client the
// test talks to it with.
type Host struct {
	App  *app.App
	Base string // http://addr
	// Client has a transport of its own, so that Stop, closing its idle
	// connections, leaves no connection goroutine behind. A test may swap
	// the transport before its first request.
	Client *http.Client
	// Bodies records every response body Send got.
	Bodies *Bodies

	served   chan error
	stopOnce sync.Once
	stopErr  error
}

// Start runs app.New with o and serves the app until Stop or the test's
// cleanup, which stops it and fails the test if Shutdown or Serve failed.
// An app.New that fails or panics fails the test, quoting log (where
// o.Logger writes). Send records the response bodies in bodies; nil for a
// record of the host's own.
func Start(t testing.TB, o app.Options, log *Log, bodies *Bodies) *Host {
	t.Helper()
	a, err, panicked := NewApp(o)
	if panicked != nil || err != nil {
		t.Fatalf("app.New: error %v, panic %v\nthe log:\n%s", err, panicked, log)
	}
	if bodies == nil {
		bodies = &Bodies{}
	}
	h := &Host{
		App:    a,
		Base:   "http://" + a.Addr(),
		Client: &http.Client{Transport: &http.Transport{}},
		Bodies: bodies,
		served: make(chan error, 1),
	}
	go func() { h.served <- a.Serve() }()
	t.Cleanup(func() {
		if err := h.Stop(); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return h
}

// Stop shuts the host down once (within 5 s) and returns Shutdown's error,
// or else Serve's. Later calls return the same.
func (h *Host) Stop() error {
	h.stopOnce.Do(func() {
		// A connection the client dialled but never used counts as busy for
		// 5 s in http.Server.Shutdown: close them first.
		h.Client.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		h.stopErr = h.App.Shutdown(ctx)
		if err := <-h.served; err != nil && h.stopErr == nil {
			h.stopErr = fmt.Errorf("Serve: %w", err)
		}
	})
	return h.stopErr
}

// Response is one answered request.
type Response struct {
	Status int
	Body   string
	Took   time.Duration // from sending the request to the body's end
}

// Send makes one request, with body (if not nil) as JSON, within timeout
// and records the response body. It is safe to call from several
// goroutines.
func (h *Host) Send(method, path string, body any, timeout time.Duration) (Response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return Response{}, err
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, h.Base+path, rd)
	if err != nil {
		return Response{}, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	began := time.Now()
	resp, err := h.Client.Do(req)
	if err != nil {
		return Response{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return Response{}, err
	}
	h.Bodies.Add(string(b))
	return Response{Status: resp.StatusCode, Body: string(b), Took: time.Since(began)}, nil
}

// Bodies records response bodies, for the secret checks. It is safe for
// concurrent use; the zero value is empty.
type Bodies struct {
	mu  sync.Mutex
	all []string
}

// Add records body.
func (b *Bodies) Add(body string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.all = append(b.all, body)
}

// All are the bodies recorded so far, oldest first.
func (b *Bodies) All() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.all...)
}

// CheckNoSecrets fails the test for every recorded body that carries one
// of secrets.
func (b *Bodies) CheckNoSecrets(t testing.TB, secrets ...string) {
	t.Helper()
	for _, body := range b.All() {
		for _, secret := range secrets {
			if strings.Contains(body, secret) {
				t.Errorf("a response body carries %q: %s", secret, body)
			}
		}
	}
}
