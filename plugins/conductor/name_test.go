package conductor_test

import (
	"strings"
	"testing"

	"github.com/wakeonchat/wakeonchat/plugins/conductor"
)

func TestValidName(t *testing.T) {
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
		if got := conductor.ValidName(tt.name); got != tt.want {
			t.Errorf("ValidName(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}
