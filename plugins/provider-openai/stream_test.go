package openai_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi/plugintest"
	openai "github.com/wakeonchat/wakeonchat/plugins/provider-openai"
)

// The body goes out byte for byte, whatever it holds.
func TestStreamSendsTheBodyAsItIs(t *testing.T) {
	const raw = `{"model":"qwen", "temperature":0.2,"tools":[{"type":"function","function":{"name":"f","parameters":{}}}],"x_extra":{"a":[1,2]},
"messages":[{"role":"user","content":"hi"}],"stream":true}`
	var accept string
	srv := newFakeModel(t, func(w http.ResponseWriter, r *http.Request) {
		accept = r.Header.Get("Accept")
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	})
	c := newClient(t, openai.Config{APIKey: testKey})

	resp, err := c.Stream(context.Background(), pluginapi.StreamRequest{Endpoint: srv.URL + "/v1", Body: []byte(raw)})
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	all, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(all) != "data: [DONE]\n\n" {
		t.Errorf("body %q, %v", all, err)
	}
	want := []seen{{Method: "POST", Path: "/v1/chat/completions", Authorization: []string{"Bearer " + testKey}, ContentType: "application/json", Body: raw}}
	if diff := cmp.Diff(want, srv.requests()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	if accept != "application/json, text/event-stream" {
		t.Errorf("Accept %q", accept)
	}
	if got := resp.Header.Get("Content-Type"); got != "text/event-stream" {
		t.Errorf("Content-Type %q, want the model's", got)
	}
}

// Each event reaches the caller while the model still holds the next one:
// nothing is buffered to the end. A stream longer than the time cap lives
// as long as no silence is. The model is a real http.Server on in-memory
// connections in a synctest bubble, so the cap and the pauses run on the
// bubble's clock.
func TestStreamRelaysEachChunkAsItArrives(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		next := make(chan struct{})
		url, client := pipeModel(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			for i := range 3 {
				_, _ = io.WriteString(w, "data: "+string(rune('a'+i))+"\n\n")
				w.(http.Flusher).Flush()
				select {
				case <-next:
				case <-r.Context().Done():
					return
				}
			}
		})
		c := newClient(t, openai.Config{Timeout: time.Second, HTTPClient: client})
		resp, err := c.Stream(context.Background(), pluginapi.StreamRequest{Endpoint: url, Body: []byte(`{}`)})
		if err != nil {
			t.Fatalf("Stream: %v", err)
		}
		defer resp.Body.Close()
		buf := make([]byte, 1024)
		for i := range 3 {
			n, err := resp.Body.Read(buf)
			if want := "data: " + string(rune('a'+i)) + "\n\n"; err != nil || string(buf[:n]) != want {
				t.Fatalf("read %d = %q, %v; want %q", i, buf[:n], err, want)
			}
			time.Sleep(400 * time.Millisecond) // 1.2 s in all: past the 1 s cap, never silent for 1 s
			next <- struct{}{}
		}
		if _, err := resp.Body.Read(buf); !errors.Is(err, io.EOF) {
			t.Errorf("after the last event: %v, want io.EOF", err)
		}
	})
}

// pipeModel serves handler with an http.Server on in-memory connections
// (net.Pipe), for a test inside a synctest bubble: it returns the model's
// URL and the plugin's own kind of HTTP client (pluginapi.NewHTTPClient)
// dialling it. A pipe holds nothing, as a full TCP send buffer: a write
// waits for the reader.
func pipeModel(t *testing.T, handler http.HandlerFunc) (string, *http.Client) {
	t.Helper()
	l := plugintest.NewPipeListener()
	srv := &http.Server{Handler: handler}
	go func() { _ = srv.Serve(l) }()
	client := pluginapi.NewHTTPClient()
	client.Transport.(*http.Transport).DialContext = l.DialContext
	t.Cleanup(func() {
		client.CloseIdleConnections()
		_ = srv.Close()
	})
	return "http://model.test/v1", client
}

// A 200 whose body falls silent for the cap is aborted with Status 200.
func TestStreamSilentBodyIsAborted(t *testing.T) {
	srv := newFakeModel(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "data: a\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	c := newClient(t, openai.Config{Timeout: 50 * time.Millisecond})
	resp, err := c.Stream(context.Background(), pluginapi.StreamRequest{Endpoint: srv.URL, Body: []byte(`{}`)})
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	defer resp.Body.Close()
	_, err = io.ReadAll(resp.Body)
	var ce *pluginapi.CompletionError
	if !errors.As(err, &ce) {
		t.Fatalf("error %v (%T) is not a *CompletionError", err, err)
	}
	want := &pluginapi.CompletionError{Status: 200, Aborted: true, Message: "timed out after 50ms"}
	if diff := cmp.Diff(want, ce); diff != "" {
		t.Errorf("error (-want +got):\n%s", diff)
	}
}

// Closing the body before its end cancels the request upstream.
func TestStreamCloseCancelsUpstream(t *testing.T) {
	gone := make(chan struct{})
	srv := newFakeModel(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "data: a\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		close(gone)
	})
	c := newClient(t, openai.Config{})
	resp, err := c.Stream(context.Background(), pluginapi.StreamRequest{Endpoint: srv.URL, Body: []byte(`{}`)})
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	buf := make([]byte, 100)
	if _, err := resp.Body.Read(buf); err != nil {
		t.Fatal(err)
	}

	resp.Body.Close()

	<-gone // the model saw its request end; a test timeout otherwise
}
