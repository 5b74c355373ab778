package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/wakeonchat/wakeonchat/host/store"
	"github.com/wakeonchat/wakeonchat/machines"
)

// Every stored change of a record is NOTIFYd, in its transaction (so it is
// delivered at commit, in commit order), on the channel of the store's
// schema, with the store's holder, so that a host tells its own changes
// from the others'.

var _ store.Changes = (*Store)(nil)

// notice is a NOTIFY's payload.
type notice struct {
	Origin string          `json:"origin"`
	Before machines.Record `json:"before"`
	After  machines.Record `json:"after"`
}

// channel is the schema's notification channel: replicas on other schemas
// of the database hear nothing of it.
func (s *Store) channel() string { return "wake_records:" + s.schema }

// notice is the payload of the NOTIFY of a change from before to after.
func (s *Store) notice(before, after machines.Record) (string, error) {
	v, err := json.Marshal(notice{Origin: s.holder, Before: before, After: after})
	if err != nil {
		return "", fmt.Errorf("store: notice of pod %q: %w", after.Pod, err)
	}
	return string(v), nil
}

// Operator log lines of the change listener.
const (
	LineListenFailed = "store change listener lost the database"
	LineListenBack   = "store change listener back"
)

// OnRecordChange listens, on a connection of its own, for the changes the
// other hosts make, and calls fn with each, until Close. A connection that
// fails is logged (LineListenFailed, once) and made again, after 100 ms
// doubling to 5 s; once it is back (LineListenBack) fn gets a Resync of
// every stored record, as changes may have been missed meanwhile.
func (s *Store) OnRecordChange(ctx context.Context, fn func(store.RecordChange)) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	s.listening.Lock()
	defer s.listening.Unlock()
	if s.listen.stop != nil {
		return errors.New("store: a record change listener is set already")
	}
	life, stop := context.WithCancel(context.Background())
	s.listen.stop, s.listen.done = stop, make(chan struct{})
	ready := make(chan error, 1)
	go s.listenLoop(life, fn, ready)
	select {
	case err := <-ready:
		return err
	case <-ctx.Done():
		// The listener goes on trying, as it does after a first LISTEN
		// that failed.
		return fmt.Errorf("store: listen for record changes: %w", ctx.Err())
	}
}

func (s *Store) listenLoop(ctx context.Context, fn func(store.RecordChange), ready chan<- error) {
	defer close(s.listen.done)
	delay, first, lost := 100*time.Millisecond, true, false
	for ctx.Err() == nil {
		err := s.listenOnce(ctx, fn, func() {
			switch {
			case first:
				ready <- nil
				first = false
			case lost:
				s.log.Info(LineListenBack)
				lost = false
			}
			delay = 100 * time.Millisecond
		}, !first)
		if ctx.Err() != nil {
			break
		}
		if first {
			// Not even the first LISTEN worked: the caller hears it, and
			// the loop goes on trying.
			ready <- dbErr("listen for record changes", err)
			first = false
		}
		if !lost {
			s.log.Warn(LineListenFailed, "err", dbErr("listen for record changes", err))
			lost = true
		}
		select {
		case <-ctx.Done():
		case <-time.After(delay):
		}
		delay = min(2*delay, 5*time.Second)
	}
	if first {
		ready <- store.ErrClosed
	}
}

// listenOnce connects, LISTENs, resyncs when resync, calls up, and passes
// on notifications until the connection fails or ctx ends.
func (s *Store) listenOnce(ctx context.Context, fn func(store.RecordChange), up func(), resync bool) error {
	cctx, cancel := context.WithTimeout(ctx, s.opTimeout)
	conn, err := pgx.ConnectConfig(cctx, s.pool.Config().ConnConfig.Copy())
	cancel()
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	lctx, cancel := context.WithTimeout(ctx, s.opTimeout)
	_, err = conn.Exec(lctx, "LISTEN "+pgx.Identifier{s.channel()}.Sanitize())
	cancel()
	if err != nil {
		return err
	}
	if resync {
		recs, err := s.Records(ctx)
		if err != nil {
			return err
		}
		for _, r := range recs {
			fn(store.RecordChange{After: r, Resync: true})
		}
	}
	// Following before up: OnRecordChange returns at the first up, and
	// from then on the host may decide on the records it holds.
	s.following.Store(true)
	defer s.following.Store(false)
	up()
	for {
		n, err := s.nextNotice(ctx, conn)
		if err != nil {
			return err
		}
		var nt notice
		if err := json.Unmarshal([]byte(n.Payload), &nt); err != nil {
			s.log.Warn(LineListenFailed, "err", fmt.Errorf("store: a notice that is not one: %w", err))
			continue
		}
		if nt.Origin == s.holder {
			continue
		}
		fn(store.RecordChange{Before: nt.Before, After: nt.After})
	}
}

// nextNotice waits on conn for the next notice. Every listenCheck without
// one it pings the database, so that one gone silent (a partition: no
// reset, no answer) ends the listener, and Following, within a ping's
// OpTimeout, rather than when the kernel gives the connection up.
func (s *Store) nextNotice(ctx context.Context, conn *pgx.Conn) (*pgconn.Notification, error) {
	for {
		wctx, cancel := context.WithTimeout(ctx, s.listenCheck)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		if err == nil || ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
			return n, err
		}
		// Quiet for listenCheck: is the database still there?
		pctx, cancel := context.WithTimeout(ctx, s.opTimeout)
		err = conn.Ping(pctx)
		cancel()
		if err != nil {
			return nil, err
		}
		s.listenPings.Add(1)
	}
}

// Following reports whether the listener is connected and has resynced
// since it last lost the database (store.Changes).
func (s *Store) Following() bool { return s.following.Load() }

// stopListening stops the listener and waits for it.
func (s *Store) stopListening() {
	s.listening.Lock()
	stop, done := s.listen.stop, s.listen.done
	s.listening.Unlock()
	if stop != nil {
		stop()
		<-done
	}
}
