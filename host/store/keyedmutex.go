package store

import (
	"context"
	"sync"
)

// KeyedMutex is a set of mutexes, one per key, each made when its key is
// first locked and never removed. Its zero value is ready to use. It must
// not be copied after first use.
type KeyedMutex struct {
	mu    sync.Mutex
	locks map[string]chan struct{} // a key's holder has put the one token in
}

// Lock locks key's mutex and returns its unlock, which must be called once.
func (k *KeyedMutex) Lock(key string) (unlock func()) {
	l := k.lock(key)
	l <- struct{}{}
	return func() { <-l }
}

// LockContext is Lock, unless ctx ends first: then it returns ctx's error
// and holds nothing.
func (k *KeyedMutex) LockContext(ctx context.Context, key string) (unlock func(), err error) {
	l := k.lock(key)
	select {
	case l <- struct{}{}:
		return func() { <-l }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// lock is key's mutex.
func (k *KeyedMutex) lock(key string) chan struct{} {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.locks == nil {
		k.locks = make(map[string]chan struct{})
	}
	l, ok := k.locks[key]
	if !ok {
		l = make(chan struct{}, 1)
		k.locks[key] = l
	}
	return l
}
