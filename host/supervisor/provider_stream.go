package supervisor

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

var _ pluginapi.Streamer = (*Provider)(nil)

// Stream calls the plugin once, like Complete: never retried, not even
// after a crash. Every failure, before the head or while the body is read,
// is a *pluginapi.CompletionError with Complete's rules (secrets scrubbed
// from its message and body); a crash while the body is read carries
// Status 200, since the model had answered.
func (pr *Provider) Stream(ctx context.Context, req pluginapi.StreamRequest) (*pluginapi.StreamResponse, error) {
	impl, gen, err := pr.p.get(ctx)
	switch {
	case errors.Is(err, ErrClosed):
		return nil, &pluginapi.CompletionError{Message: "provider plugin closed"}
	case err != nil && ctx.Err() != nil:
		return nil, &pluginapi.CompletionError{Aborted: true, Message: ctx.Err().Error()}
	case err != nil:
		pr.p.log.Error("provider plugin unavailable", "error", pr.p.scrub(err.Error()))
		return nil, &pluginapi.CompletionError{Message: "provider plugin unavailable"}
	}
	s, ok := impl.(pluginapi.Streamer)
	if !ok {
		pr.p.log.Error("provider plugin failed", "error", "it does not serve Stream")
		return nil, &pluginapi.CompletionError{Message: "provider plugin failed"}
	}
	resp, err := s.Stream(ctx, req)
	if err != nil {
		return nil, pr.streamError(ctx, gen, 0, err)
	}
	resp.Body = &providerBody{ReadCloser: resp.Body, pr: pr, ctx: ctx, gen: gen}
	return resp, nil
}

// streamError classifies a failed Stream or body read, as Complete does.
func (pr *Provider) streamError(ctx context.Context, gen uint64, status int, err error) error {
	var ce *pluginapi.CompletionError
	switch {
	case errors.As(err, &ce):
		out := *ce
		out.Message = pr.p.scrub(ce.Message)
		if ce.Body != nil {
			out.Body = []byte(pr.p.scrub(string(ce.Body)))
		}
		return &out
	case pr.p.isCrash(ctx, gen, err):
		pr.p.crashed(gen, err)
		return &pluginapi.CompletionError{Status: status, Message: "provider plugin crashed"}
	default:
		pr.p.log.Error("provider plugin failed", "error", pr.p.scrub(err.Error()))
		return &pluginapi.CompletionError{Status: status, Message: "provider plugin failed"}
	}
}

// providerBody classifies a failed read of a 200's body.
type providerBody struct {
	io.ReadCloser
	pr  *Provider
	ctx context.Context
	gen uint64
}

// Buffered is the plugin's body's: how many bytes the next Read returns
// without waiting (pluginapi.StreamResponse).
func (b *providerBody) Buffered() int {
	if bb, ok := b.ReadCloser.(interface{ Buffered() int }); ok {
		return bb.Buffered()
	}
	return 0
}

func (b *providerBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		err = b.pr.streamError(b.ctx, b.gen, http.StatusOK, err)
	}
	return n, err
}
