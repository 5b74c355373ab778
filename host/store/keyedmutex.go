package store

import "sync"

// KeyedMutex is a set of mutexes, one per key, each made when its key is
// first locked and never removed. Its zero value is ready to use. It must
// not be copied after first use.
type KeyedMutex struct {
	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

// Lock locks key's mutex and returns its unlock.
func (k *KeyedMutex) Lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = make(map[string]*sync.Mutex)
	}
	m, ok := k.locks[key]
	if !ok {
		m = new(sync.Mutex)
		k.locks[key] = m
	}
	k.mu.Unlock()
	m.Lock()
	return m.Unlock
}
