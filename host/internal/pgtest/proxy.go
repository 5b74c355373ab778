package pgtest

import (
	"net"
	"strconv"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Proxy is a TCP proxy in front of the test server, on a loopback port of
// its own, that a test takes down and brings back: a database that drops
// while the host runs, and returns.
type Proxy struct {
	t      testing.TB
	target string
	addr   string

	mu    sync.Mutex
	ln    net.Listener // nil while down
	conns map[net.Conn]bool
	thaw  chan struct{} // non-nil while frozen: closed by Thaw
	wg    sync.WaitGroup
}

// NewProxy starts a proxy to the test server (Need first) and returns it
// with dsn, a DSN like dsn but through the proxy. It stops at t's cleanup.
func NewProxy(t testing.TB, dsn string) (*Proxy, string) {
	t.Helper()
	Need(t)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{t: t, target: net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))), conns: map[net.Conn]bool{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(func() {
		p.Down()
		p.wg.Wait()
	})
	host, port, _ := net.SplitHostPort(p.addr)
	return p, withHostPort(dsn, host, port)
}

// Addr is the proxy's address.
func (p *Proxy) Addr() string { return p.addr }

// serve accepts on ln until Down closes it.
func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns[c], p.conns[up] = true, true
			p.mu.Unlock()
			pipe := func(dst, src net.Conn) {
				buf := make([]byte, 32<<10)
				for {
					n, err := src.Read(buf)
					if n > 0 {
						p.waitThawed()
						if _, werr := dst.Write(buf[:n]); werr != nil {
							break
						}
					}
					if err != nil {
						break
					}
				}
				dst.Close()
				src.Close()
				p.mu.Lock()
				delete(p.conns, dst)
				delete(p.conns, src)
				p.mu.Unlock()
			}
			p.wg.Go(func() { pipe(up, c) })
			p.wg.Go(func() { pipe(c, up) })
		}
	})
}

// Freeze stops passing bytes on, either way, without closing anything: a
// database gone silent behind a partition (no reset, no answer). What
// arrives meanwhile is held, and passed on at Thaw.
func (p *Proxy) Freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.thaw == nil {
		p.thaw = make(chan struct{})
	}
}

// Thaw passes bytes on again after Freeze.
func (p *Proxy) Thaw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.thaw != nil {
		close(p.thaw)
		p.thaw = nil
	}
}

// waitThawed waits while the proxy is frozen.
func (p *Proxy) waitThawed() {
	p.mu.Lock()
	thaw := p.thaw
	p.mu.Unlock()
	if thaw != nil {
		<-thaw
	}
}

// Down closes the listener and every connection through it: the database
// is gone (connections reset, new ones refused); it thaws a frozen proxy.
// Down when down does nothing.
func (p *Proxy) Down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.thaw != nil {
		close(p.thaw)
		p.thaw = nil
	}
	if p.ln == nil {
		return
	}
	p.ln.Close()
	p.ln = nil
	for c := range p.conns {
		c.Close()
	}
}

// Up listens again on the same address: the database is back.
func (p *Proxy) Up() {
	p.t.Helper()
	p.mu.Lock()
	up := p.ln != nil
	p.mu.Unlock()
	if up {
		return
	}
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Fatalf("proxy: listening again on %s: %v", p.addr, err)
	}
	p.serve(ln)
}
