// Package pipenet is a net.Listener of in-memory connections (net.Pipe),
// so that a real http.Server runs inside a testing/synctest bubble with its
// deadlines on the bubble's clock. A pipe holds nothing: a write blocks
// until the client reads it, as a full TCP send buffer does, which is what
// the tests of a client that stops reading need (a buffered listener such
// as gRPC's bufconn would hide it).
package pipenet

import (
	"net"
	"sync"
)

// Listener hands out the server ends of the pipes Dial makes.
type Listener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

// New returns a Listener.
func New() *Listener {
	return &Listener{conns: make(chan net.Conn, 1), done: make(chan struct{})}
}

// Dial is a client connection to the listener's server.
func (l *Listener) Dial() net.Conn {
	server, client := net.Pipe()
	l.conns <- server
	return client
}

// Accept returns the next connection Dial made, or net.ErrClosed once the
// listener is closed.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close stops Accept; it may be called more than once.
func (l *Listener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

// Addr is a loopback address: the listener has none of its own.
func (l *Listener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }
