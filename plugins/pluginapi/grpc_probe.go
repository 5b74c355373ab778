package pluginapi

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/wakeonchat/wakeonchat/plugins/pluginapi/proto"
)

var _ Prober = (*providerClient)(nil)

// Probe calls the plugin's Probe. The model's answer, or why there was
// none, is the ProbeResult; an error is the call's own failure: the
// caller's ctx ended (it wraps ctx's error), or the plugin failed (a gRPC
// status error: codes.Unavailable when it died, codes.Unimplemented when
// it serves no Probe).
func (c *providerClient) Probe(ctx context.Context, endpoint string) (ProbeResult, error) {
	resp, err := c.client.Probe(ctx, &pb.ProbeRequest{Endpoint: endpoint})
	if err != nil {
		return ProbeResult{}, rpcError(ctx, "probe", err)
	}
	return ProbeResult{
		Answered:         resp.GetAnswered(),
		Status:           int(resp.GetStatus()),
		TransportFailure: resp.GetTransportFailure(),
		Aborted:          resp.GetAborted(),
		Message:          resp.GetMessage(),
	}, nil
}

// Probe serves the Provider's Probe. A Provider that is no Prober answers
// codes.Unimplemented, as a plugin of another language that serves no
// Probe does; an implementation that returns an error breaks the contract
// and fails the call.
func (s *providerServer) Probe(ctx context.Context, req *pb.ProbeRequest) (*pb.ProbeResponse, error) {
	if s.prober == nil {
		return nil, status.Error(codes.Unimplemented, "this provider plugin implements no Probe (plugin protocol 3)")
	}
	r, err := s.prober.Probe(ctx, req.GetEndpoint())
	if err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	return &pb.ProbeResponse{
		Answered:         r.Answered,
		Status:           int32(r.Status),
		TransportFailure: r.TransportFailure,
		Aborted:          r.Aborted,
		Message:          r.Message,
	}, nil
}
