package supervisor

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// bufferedBody is a plugin's body that says it holds n bytes.
type bufferedBody struct {
	io.ReadCloser
	n int
}

func (b bufferedBody) Buffered() int { return b.n }

// A 200's body says what the plugin's body holds: the relay counts on it
// to send its head with the bytes that came with the model's. A body that
// cannot say holds nothing.
func TestProviderBodyBuffered(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body io.ReadCloser
		want int
	}{
		{"the plugin's body holds 5 bytes", bufferedBody{ReadCloser: io.NopCloser(strings.NewReader("hello")), n: 5}, 5},
		{"the plugin's body cannot say", io.NopCloser(strings.NewReader("hello")), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &providerBody{ReadCloser: tt.body, ctx: context.Background()}
			if diff := cmp.Diff(tt.want, b.Buffered()); diff != "" {
				t.Errorf("Buffered() (-want +got):\n%s", diff)
			}
		})
	}
}
