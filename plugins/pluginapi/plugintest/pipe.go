package plugintest

import (
	"context"
	"net"
	"sync"
)

// PipeListener is a net.Listener of in-memory connections (net.Pipe), so
// that a real http.Server runs inside a testing/synctest bubble with its
// deadlines on the bubble's clock. A pipe holds nothing: a write blocks
// until the client reads it, as a full TCP send buffer does, which is what
// the tests of a client that stops reading need (a buffered listener such
// as gRPC's bufconn would hide it). It hands out the server ends of the
// pipes Dial and DialContext make.
type PipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

// NewPipeListener returns a PipeListener.
func NewPipeListener() *PipeListener {
	return &PipeListener{conns: make(chan net.Conn, 1), done: make(chan struct{})}
}

// Dial is a client connection to the listener's server.
func (l *PipeListener) Dial() net.Conn {
	server, client := net.Pipe()
	l.conns <- server
	return client
}

// DialContext is Dial as an http.Transport's DialContext takes it (the
// network and address are the listener's whatever they say): it fails
// with net.ErrClosed once the listener is closed, and with ctx's error
// when ctx ends before the server could take the connection.
func (l *PipeListener) DialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	server, client := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
	case <-ctx.Done():
	}
	server.Close()
	client.Close()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return nil, net.ErrClosed
}

// Accept returns the next connection Dial made, or net.ErrClosed once the
// listener is closed.
func (l *PipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close stops Accept; it may be called more than once.
func (l *PipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

// Addr is a loopback address: the listener has none of its own.
func (l *PipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }
