package machines

import (
	"testing"
	"time"
)

// BenchmarkDecide measures one decision on the hottest path: a second ask
// inside the window, rendered with the default wording.
func BenchmarkDecide(b *testing.B) {
	pod, err := NewPod(DefaultPolicy())
	if err != nil {
		b.Fatal(err)
	}
	r := rec(Waking, wokeAt(0))
	ev := notReady(at(3*time.Minute), "CREATED")
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := pod.Decide(r, ev); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecideWake is a first ask: a wake and its reply.
func BenchmarkDecideWake(b *testing.B) {
	pod, err := NewPod(DefaultPolicy())
	if err != nil {
		b.Fatal(err)
	}
	r := NewRecord("qwen")
	ev := notReady(at(0), "EXITED")
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := pod.Decide(r, ev); err != nil {
			b.Fatal(err)
		}
	}
}
