package pluginapi

import (
	"context"
	"errors"

	pb "github.com/wakeonchat/wakeonchat/plugins/pluginapi/proto"
)

// providerClient is the host side of a Provider plugin.
type providerClient struct {
	client pb.ProviderClient
}

var _ Provider = (*providerClient)(nil)

// Complete calls the plugin. A failure the plugin classified comes back as
// the same *CompletionError; the caller's own cancellation or deadline as a
// *CompletionError with Aborted set. Any other error is the plugin's own
// failure (a gRPC status error, codes.Unavailable when the plugin died),
// which the caller classifies.
func (c *providerClient) Complete(ctx context.Context, endpoint string, req CompletionRequest) (string, error) {
	msgs := make([]*pb.Message, len(req.Messages))
	for i, m := range req.Messages {
		msgs[i] = &pb.Message{Role: m.Role, Content: m.Content}
	}
	resp, err := c.client.Complete(ctx, &pb.CompleteRequest{
		Endpoint: endpoint,
		Model:    req.Model,
		Messages: msgs,
	})
	if err != nil {
		if ended := callerEnded(ctx, err); ended != nil {
			return "", &CompletionError{Aborted: true, Message: ended.Error()}
		}
		return "", rpcError(ctx, "complete", err)
	}
	if f := resp.GetFailure(); f != nil {
		return "", &CompletionError{
			Status:           int(f.GetStatus()),
			TransportFailure: f.GetTransportFailure(),
			Aborted:          f.GetAborted(),
			Message:          f.GetMessage(),
		}
	}
	return resp.GetContent(), nil
}

// providerServer is the plugin side of a Provider plugin.
type providerServer struct {
	pb.UnimplementedProviderServer
	impl Provider
}

func (s *providerServer) Complete(ctx context.Context, req *pb.CompleteRequest) (*pb.CompleteResponse, error) {
	var msgs []Message
	if n := len(req.GetMessages()); n > 0 {
		msgs = make([]Message, n)
		for i, m := range req.GetMessages() {
			msgs[i] = Message{Role: m.GetRole(), Content: m.GetContent()}
		}
	}
	content, err := s.impl.Complete(ctx, req.GetEndpoint(), CompletionRequest{Model: req.GetModel(), Messages: msgs})
	if err != nil {
		var ce *CompletionError
		if !errors.As(err, &ce) {
			ce = &CompletionError{Message: err.Error()}
		}
		return &pb.CompleteResponse{Failure: &pb.CompletionFailure{
			Status:           int32(ce.Status),
			TransportFailure: ce.TransportFailure,
			Aborted:          ce.Aborted,
			Message:          ce.Message,
		}}, nil
	}
	return &pb.CompleteResponse{Content: content}, nil
}
