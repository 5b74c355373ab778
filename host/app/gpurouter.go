package app

import (
	"context"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// gpuRouter is the one pluginapi.GPU the coordinator and the resolvers
// are given: it sends each call about a pod to the GPU plugin of the
// pod's backend, so that neither knows there are several. A pod no
// provider has is the default's, the [conductor] backend's, as every pod
// was before there were others.
type gpuRouter struct {
	byPod map[string]pluginapi.GPU
	def   pluginapi.GPU
}

var _ pluginapi.GPU = gpuRouter{}

func (r gpuRouter) of(pod string) pluginapi.GPU {
	if g, ok := r.byPod[pod]; ok {
		return g
	}
	return r.def
}

func (r gpuRouter) GetPod(ctx context.Context, name string) (pluginapi.Pod, error) {
	return r.of(name).GetPod(ctx, name)
}

func (r gpuRouter) StartPod(ctx context.Context, name string) (pluginapi.StartResult, error) {
	return r.of(name).StartPod(ctx, name)
}

func (r gpuRouter) StopPod(ctx context.Context, name string) (pluginapi.StartResult, error) {
	return r.of(name).StopPod(ctx, name)
}
