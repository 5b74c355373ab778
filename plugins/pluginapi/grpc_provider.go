package pluginapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	pb "github.com/wakeonchat/wakeonchat/plugins/pluginapi/proto"
)

// chunkSize is the most bytes one data part carries: a read of the model's
// body is sent as soon as it returns, up to this much.
const chunkSize = 32 << 10

// providerClient is the host side of a Provider plugin.
type providerClient struct {
	client pb.ProviderClient
}

var (
	_ Provider = (*providerClient)(nil)
	_ Streamer = (*providerClient)(nil)
)

// Complete is CompleteVia over Stream: the wire has no other completion
// call since protocol 2.
func (c *providerClient) Complete(ctx context.Context, endpoint string, req CompletionRequest) (string, error) {
	return CompleteVia(ctx, c, endpoint, req)
}

// Stream calls the plugin. A failure the plugin classified comes back as
// the same *CompletionError, before the head or while the body is read;
// the caller's own cancellation or deadline as a *CompletionError with
// Aborted set (and Status 200 once the head arrived). Any other error is
// the plugin's own failure (a gRPC status error, codes.Unavailable when
// the plugin died), which the caller classifies.
func (c *providerClient) Stream(ctx context.Context, req StreamRequest) (*StreamResponse, error) {
	sctx, cancel := context.WithCancel(ctx)
	st, err := c.client.Stream(sctx, &pb.StreamRequest{Endpoint: req.Endpoint, Body: req.Body})
	if err != nil {
		cancel()
		return nil, callError(ctx, 0, err)
	}
	part, err := st.Recv()
	if err != nil {
		cancel()
		if errors.Is(err, io.EOF) {
			return nil, errors.New("plugin stream: ended without a head or a failure")
		}
		return nil, callError(ctx, 0, err)
	}
	switch p := part.GetPart().(type) {
	case *pb.StreamPart_Failure:
		cancel()
		return nil, failureError(p.Failure)
	case *pb.StreamPart_Head:
		return &StreamResponse{
			Status: int(p.Head.GetStatus()),
			Header: headerFromProto(p.Head.GetHeaders()),
			Body:   &streamBody{ctx: ctx, st: st, cancel: cancel, pending: p.Head.GetData()},
		}, nil
	}
	cancel()
	return nil, errors.New("plugin stream: the first part is data")
}

// callError is a failed call or Recv: the caller's end as an abort, else
// the gRPC error.
func callError(ctx context.Context, status int, err error) error {
	if ended := callerEnded(ctx, err); ended != nil {
		return &CompletionError{Status: status, Aborted: true, Message: ended.Error()}
	}
	return rpcError(ctx, "stream", err)
}

func failureError(f *pb.CompletionFailure) *CompletionError {
	return &CompletionError{
		Status:           int(f.GetStatus()),
		TransportFailure: f.GetTransportFailure(),
		Aborted:          f.GetAborted(),
		Message:          f.GetMessage(),
		Body:             f.GetBody(),
	}
}

// streamBody reads the data parts of a Stream.
type streamBody struct {
	ctx     context.Context
	st      pb.Provider_StreamClient
	cancel  context.CancelFunc
	pending []byte
	err     error // sticky, once the stream ended
}

func (b *streamBody) Read(p []byte) (int, error) {
	for len(b.pending) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		part, err := b.st.Recv()
		switch {
		case errors.Is(err, io.EOF):
			b.err = io.EOF
		case err != nil:
			b.err = callError(b.ctx, http.StatusOK, err)
		case part.GetFailure() != nil:
			b.err = failureError(part.GetFailure())
		default:
			b.pending = part.GetData()
		}
	}
	n := copy(p, b.pending)
	b.pending = b.pending[n:]
	return n, nil
}

// Buffered is how many bytes the next Read returns without waiting: those
// that came with the head or with the last part.
func (b *streamBody) Buffered() int { return len(b.pending) }

// Close cancels the call: the plugin cancels the request upstream.
func (b *streamBody) Close() error {
	b.cancel()
	if b.err == nil {
		b.err = errors.New("plugin stream: read after close")
	}
	return nil
}

// providerServer is the plugin side of a Provider plugin.
type providerServer struct {
	pb.UnimplementedProviderServer
	impl   Streamer
	prober Prober // nil when the Provider is no Prober
	router Router // nil when the Provider is no Router
}

func newProviderServer(impl Provider) *providerServer {
	s, ok := impl.(Streamer)
	if !ok {
		s = StreamFromComplete(impl)
	}
	p, _ := impl.(Prober)
	r, _ := impl.(Router)
	return &providerServer{impl: s, prober: p, router: r}
}

func (s *providerServer) Stream(req *pb.StreamRequest, srv pb.Provider_StreamServer) error {
	resp, err := s.impl.Stream(srv.Context(), StreamRequest{Endpoint: req.GetEndpoint(), Body: req.GetBody()})
	if err != nil {
		return srv.Send(failurePart(err, 0))
	}
	defer func() { _ = resp.Body.Close() }()
	head := &pb.StreamHead{Status: int32(resp.Status), Headers: headerToProto(resp.Header)}
	// The body's first bytes usually come with the head (a whole
	// non-streaming answer, a stream's first event): they travel in the
	// head's message when they arrive within coalesceWait, which saves a
	// message across the boundary; the head never waits longer for them.
	// The first read runs here, and a timer sends the head should it take
	// longer: handing the read to another goroutine cost a wake-up on every
	// call.
	buf := make([]byte, chunkSize)
	var (
		mu       sync.Mutex // serialises the two tries at sending the head
		headSent bool
		headErr  error
	)
	// sendHead sends the head with data unless it was sent; sent says
	// whether this call sent it.
	sendHead := func(data []byte) (sent bool, err error) {
		mu.Lock()
		defer mu.Unlock()
		if headSent {
			return false, headErr
		}
		headSent, head.Data = true, data
		headErr = srv.Send(&pb.StreamPart{Part: &pb.StreamPart_Head{Head: head}})
		return true, headErr
	}
	timer := time.AfterFunc(coalesceWait, func() { _, _ = sendHead(nil) })
	n, readErr := resp.Body.Read(buf)
	timer.Stop()
	carried, err := sendHead(buf[:n])
	if err != nil {
		return err
	}
	if !carried && n > 0 {
		if err := srv.Send(&pb.StreamPart{Part: &pb.StreamPart_Data{Data: buf[:n]}}); err != nil {
			return err
		}
	}
	for {
		if readErr != nil {
			if errors.Is(readErr, io.EOF) {
				return nil
			}
			return srv.Send(failurePart(readErr, resp.Status))
		}
		n, readErr = resp.Body.Read(buf)
		if n > 0 {
			// Send marshals before it returns: buf can be reused.
			if serr := srv.Send(&pb.StreamPart{Part: &pb.StreamPart_Data{Data: buf[:n]}}); serr != nil {
				return serr
			}
		}
	}
}

// coalesceWait is how long the head waits for the body's first bytes to
// travel with it.
const coalesceWait = time.Millisecond

func headerFromProto(hs []*pb.Header) http.Header {
	h := make(http.Header, len(hs))
	for _, kv := range hs {
		h[http.CanonicalHeaderKey(kv.GetName())] = kv.GetValues()
	}
	return h
}

func headerToProto(h http.Header) []*pb.Header {
	var hs []*pb.Header
	for name, values := range h {
		hs = append(hs, &pb.Header{Name: name, Values: values})
	}
	return hs
}

// failurePart is err as a failure part; an error that is not a
// *CompletionError keeps its text as the message, with status.
func failurePart(err error, status int) *pb.StreamPart {
	var ce *CompletionError
	if !errors.As(err, &ce) {
		ce = &CompletionError{Status: status, Message: err.Error()}
	}
	return &pb.StreamPart{Part: &pb.StreamPart_Failure{Failure: &pb.CompletionFailure{
		Status:           int32(ce.Status),
		TransportFailure: ce.TransportFailure,
		Aborted:          ce.Aborted,
		Message:          ce.Message,
		Body:             ce.Body,
	}}}
}
