package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/wakeonchat/wakeonchat/host/store"
)

// One key's holder excludes that key's other lockers (under -race, the
// counter's unguarded writes would be reported otherwise) and never another
// key's.
func TestKeyedMutex(t *testing.T) {
	t.Parallel()
	var k store.KeyedMutex
	counts := map[string]*int{"a": new(int), "b": new(int)}
	var wg sync.WaitGroup
	for i := range 200 {
		key := []string{"a", "b"}[i%2]
		wg.Go(func() {
			defer k.Lock(key)()
			*counts[key]++
		})
	}
	wg.Wait()
	if *counts["a"] != 100 || *counts["b"] != 100 {
		t.Errorf("counts a %d, b %d; want 100 each", *counts["a"], *counts["b"])
	}

	unlockA := k.Lock("a")
	done := make(chan struct{})
	go func() {
		k.Lock("b")() // a held does not hold b up
		close(done)
	}()
	<-done
	unlockA()
	k.Lock("a")() // and a is free again once unlocked
}

// LockContext waits for the key's holder until its context ends, and then
// holds nothing.
func TestKeyedMutexContext(t *testing.T) {
	t.Parallel()
	var k store.KeyedMutex
	unlock := k.Lock("a")
	ctx, cancel := context.WithCancel(t.Context())
	got := make(chan error, 1)
	go func() {
		_, err := k.LockContext(ctx, "a")
		got <- err
	}()
	cancel()
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Errorf("LockContext of a held key, its context cancelled: %v, want context.Canceled", err)
	}
	unlock()
	unlock, err := k.LockContext(t.Context(), "a") // nothing was left held
	if err != nil {
		t.Fatal(err)
	}
	unlock()
}
