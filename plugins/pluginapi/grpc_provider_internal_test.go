package pluginapi

import (
	"context"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"

	pb "github.com/wakeonchat/wakeonchat/plugins/pluginapi/proto"
)

// headClient is a Provider plugin's gRPC client whose Stream answers parts,
// one a Recv, then io.EOF.
type headClient struct {
	pb.ProviderClient // nil: only Stream is called
	parts             []*pb.StreamPart
}

func (c *headClient) Stream(context.Context, *pb.StreamRequest, ...grpc.CallOption) (grpc.ServerStreamingClient[pb.StreamPart], error) {
	return &partStream{parts: c.parts}, nil
}

// partStream is a Stream's parts as they arrive.
type partStream struct {
	grpc.ClientStream // nil: only Recv is called
	parts             []*pb.StreamPart
}

func (s *partStream) Recv() (*pb.StreamPart, error) {
	if len(s.parts) == 0 {
		return nil, io.EOF
	}
	p := s.parts[0]
	s.parts = s.parts[1:]
	return p, nil
}

// The bytes that came with the head are Buffered, and only they: the next
// Read returns them without waiting, and the host sends its own head with
// them.
func TestStreamBodyBufferedHoldsTheHeadsData(t *testing.T) {
	tests := []struct {
		name string
		data string
	}{
		{"a head with data", `{"choices":[]}`},
		{"a head without data", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &providerClient{client: &headClient{parts: []*pb.StreamPart{
				{Part: &pb.StreamPart_Head{Head: &pb.StreamHead{Status: 200, Data: []byte(tt.data)}}},
				{Part: &pb.StreamPart_Data{Data: []byte("later")}},
			}}}
			resp, err := c.Stream(context.Background(), StreamRequest{Endpoint: "https://pod/v1"})
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			defer resp.Body.Close()
			b, ok := resp.Body.(interface{ Buffered() int })
			if !ok {
				t.Fatalf("the body (%T) has no Buffered", resp.Body)
			}
			if diff := cmp.Diff(len(tt.data), b.Buffered()); diff != "" {
				t.Errorf("Buffered() (-want +got):\n%s", diff)
			}
		})
	}
}
