package store_test

import (
	"sync"
	"testing"

	"github.com/wakeonchat/wakeonchat/host/store"
)

// One key's holder excludes that key's other lockers (under -race, the
// counter's unguarded writes would be reported otherwise) and never another
// key's.
func TestKeyedMutex(t *testing.T) {
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
