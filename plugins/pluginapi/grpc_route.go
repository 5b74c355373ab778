package pluginapi

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/wakeonchat/wakeonchat/plugins/pluginapi/proto"
)

var _ Router = (*providerClient)(nil)

// Route calls the plugin's Route (protocol 4). A plugin that gives no
// route answers ErrNoRoute; any other error is the call's own failure: the
// caller's ctx ended (it wraps ctx's error), or the plugin failed (a gRPC
// status error). The caller must not call it on a plugin that negotiated
// an earlier protocol, whose Route is codes.Unimplemented too.
func (c *providerClient) Route(ctx context.Context, endpoint string) (Route, error) {
	resp, err := c.client.Route(ctx, &pb.RouteRequest{Endpoint: endpoint})
	if status.Code(err) == codes.Unimplemented {
		return Route{}, ErrNoRoute
	}
	if err != nil {
		return Route{}, rpcError(ctx, "route", err)
	}
	r := Route{Direct: resp.GetDirect(), BaseURL: resp.GetBaseUrl(), Timeout: time.Duration(resp.GetTimeoutMs()) * time.Millisecond}
	if hs := resp.GetHeaders(); len(hs) > 0 {
		r.Header = headerFromProto(hs)
	}
	return r, nil
}

// Route serves the Provider's Route. A Provider that is no Router, or
// whose Route answers ErrNoRoute, answers codes.Unimplemented: every
// completion goes through Stream.
func (s *providerServer) Route(ctx context.Context, req *pb.RouteRequest) (*pb.RouteResponse, error) {
	if s.router == nil {
		return nil, status.Error(codes.Unimplemented, "this provider plugin gives no route (plugin protocol 4)")
	}
	r, err := s.router.Route(ctx, req.GetEndpoint())
	switch {
	case errors.Is(err, ErrNoRoute):
		return nil, status.Error(codes.Unimplemented, ErrNoRoute.Error())
	case err != nil:
		return nil, fmt.Errorf("route: %w", err)
	}
	return &pb.RouteResponse{Direct: r.Direct, BaseUrl: r.BaseURL, TimeoutMs: r.Timeout.Milliseconds(), Headers: headerToProto(r.Header)}, nil
}
