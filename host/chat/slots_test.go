package chat

import (
	"context"
	"testing"
	"time"
)

// TestSlots: one turn per session; a turn that has replied and is storing
// makes the next one wait rather than fail; a running one makes it fail.
func TestSlots(t *testing.T) {
	t.Parallel()
	var s slots
	ctx := context.Background()
	if !s.take(ctx, "a") {
		t.Fatal("first take failed")
	}
	if s.take(ctx, "a") {
		t.Fatal("a second turn took a running session's slot")
	}
	if !s.take(ctx, "b") {
		t.Fatal("another session was blocked")
	}

	s.finish("a", func() error { return nil })
	got := make(chan bool)
	go func() { got <- s.take(ctx, "a") }()
	select {
	case <-got:
		t.Fatal("took a finishing slot before it was released")
	case <-time.After(20 * time.Millisecond):
	}
	s.release("a")
	select {
	case ok := <-got:
		if !ok {
			t.Fatal("the waiting turn did not get the slot")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting turn was never woken")
	}

	s.finish("a", func() error { return nil })
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if s.take(cctx, "a") {
		t.Error("a cancelled wait took the slot")
	}
	if err := s.wait(cctx, "a"); err == nil {
		t.Error("wait on a busy session with a cancelled context returned nil")
	}
	s.release("a")
	if err := s.wait(ctx, "a"); err != nil {
		t.Errorf("wait on an idle session: %v", err)
	}
	s.release("b")
}
