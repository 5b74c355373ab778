package pluginapi_test

import (
	"strings"
	"testing"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

func TestValidPodName(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"qwen", true},
		{"q", true},
		{"7", true},
		{"qwen-72b-2", true},
		{strings.Repeat("a", 63), true},
		{"", false},
		{strings.Repeat("a", 64), false},
		{"-qwen", false},
		{"qwen-", false},
		{"-", false},
		{"Qwen", false},
		{"qwen_72b", false},
		{"qwen.72b", false},
		{"qwen/start", false},
		{"..", false},
		{"qwen%2f", false},
		{"qwén", false},
		{"qwen ", false},
	}
	for _, tt := range tests {
		if got := pluginapi.ValidPodName(tt.name); got != tt.want {
			t.Errorf("ValidPodName(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}
