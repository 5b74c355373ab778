package pluginapi

import (
	"context"
	"errors"
	"fmt"
	"time"

	pb "github.com/wakeonchat/wakeonchat/plugins/pluginapi/proto"
)

// gpuClient is the host side of a GPU plugin: it implements GPU over gRPC.
type gpuClient struct {
	client pb.GPUClient
}

var _ GPU = (*gpuClient)(nil)

func (c *gpuClient) GetPod(ctx context.Context, name string) (Pod, error) {
	resp, err := c.client.GetPod(ctx, &pb.GetPodRequest{Name: name})
	if err != nil {
		return Pod{}, rpcError(ctx, "get pod", err)
	}
	if f := resp.GetFailure(); f != nil {
		return Pod{}, &LookupError{Status: int(f.GetStatus()), Message: f.GetMessage()}
	}
	return podFromProto(resp.GetPod()), nil
}

func (c *gpuClient) StartPod(ctx context.Context, name string) (StartResult, error) {
	resp, err := c.client.StartPod(ctx, &pb.StartPodRequest{Name: name})
	if err != nil {
		return StartResult{}, rpcError(ctx, "start pod", err)
	}
	return startResultFromProto(resp.GetResult()), nil
}

func (c *gpuClient) StopPod(ctx context.Context, name string) (StartResult, error) {
	resp, err := c.client.StopPod(ctx, &pb.StopPodRequest{Name: name})
	if err != nil {
		return StartResult{}, rpcError(ctx, "stop pod", err)
	}
	return startResultFromProto(resp.GetResult()), nil
}

// gpuServer is the plugin side: it serves a GPU implementation over gRPC.
type gpuServer struct {
	pb.UnimplementedGPUServer
	impl GPU
}

func (s *gpuServer) GetPod(ctx context.Context, req *pb.GetPodRequest) (*pb.GetPodResponse, error) {
	pod, err := s.impl.GetPod(ctx, req.GetName())
	if err != nil {
		var le *LookupError
		if !errors.As(err, &le) {
			le = &LookupError{Message: err.Error()}
		}
		return &pb.GetPodResponse{Failure: &pb.LookupFailure{
			Status:  int32(le.Status),
			Message: le.Message,
		}}, nil
	}
	return &pb.GetPodResponse{Pod: podToProto(pod)}, nil
}

func (s *gpuServer) StartPod(ctx context.Context, req *pb.StartPodRequest) (*pb.StartPodResponse, error) {
	r, err := s.impl.StartPod(ctx, req.GetName())
	if err != nil {
		// StartPod must not fail; an implementation that does is broken.
		return nil, fmt.Errorf("start pod: %w", err)
	}
	return &pb.StartPodResponse{Result: startResultToProto(r)}, nil
}

func (s *gpuServer) StopPod(ctx context.Context, req *pb.StopPodRequest) (*pb.StopPodResponse, error) {
	r, err := s.impl.StopPod(ctx, req.GetName())
	if err != nil {
		return nil, fmt.Errorf("stop pod: %w", err)
	}
	return &pb.StopPodResponse{Result: startResultToProto(r)}, nil
}

func podToProto(p Pod) *pb.Pod {
	var since string
	if !p.ReadySince.IsZero() {
		since = p.ReadySince.UTC().Format(time.RFC3339Nano)
	}
	return &pb.Pod{
		Name:       p.Name,
		Status:     p.Status,
		IsRunning:  p.IsRunning,
		ProxyUrl:   p.ProxyURL,
		PodId:      p.PodID,
		ReadySince: since,
		Lookup:     string(p.Lookup),
	}
}

// ParseReadySince reads a readySince as the conductor and the wire give it:
// RFC 3339, or zero when it is empty or does not parse.
func ParseReadySince(s string) time.Time {
	t, _ := time.Parse(time.RFC3339, s) // the zero time when it fails
	return t
}

func podFromProto(p *pb.Pod) Pod {
	return Pod{
		Name:       p.GetName(),
		Status:     p.GetStatus(),
		IsRunning:  p.GetIsRunning(),
		ProxyURL:   p.GetProxyUrl(),
		PodID:      p.GetPodId(),
		ReadySince: ParseReadySince(p.GetReadySince()),
		Lookup:     Lookup(p.GetLookup()),
	}
}

func startResultToProto(r StartResult) *pb.StartResult {
	return &pb.StartResult{
		Requested: r.Requested,
		Status:    int32(r.Status),
		TimedOut:  r.TimedOut,
		TimeoutMs: r.TimeoutMs,
		Lost:      r.Lost,
		Error:     r.Error,
	}
}

func startResultFromProto(r *pb.StartResult) StartResult {
	return StartResult{
		Requested: r.GetRequested(),
		Status:    int(r.GetStatus()),
		TimedOut:  r.GetTimedOut(),
		TimeoutMs: r.GetTimeoutMs(),
		Lost:      r.GetLost(),
		Error:     r.GetError(),
	}
}
