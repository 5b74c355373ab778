package postgres

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/wakeonchat/wakeonchat/host/store"
)

// History returns the last last messages of session, oldest first; nil when
// last <= 0 or the session is unknown. It reads only the messages it
// returns.
func (s *Store) History(ctx context.Context, session string, last int) ([]store.Message, error) {
	if session == "" {
		return nil, store.ErrEmptySession
	}
	if last <= 0 {
		return nil, nil
	}
	return s.history(ctx, `SELECT role, content FROM wake_messages WHERE session = $1
		ORDER BY seq DESC LIMIT $2`, session, last)
}

// HistoryWithin returns the newest messages of session, at most last of
// them, whose contents total at most maxBytes bytes, oldest first: the
// messages of History(session, last) from the newest back to the first
// that would take the total past maxBytes, which ends them. The database
// sums the sizes (a size needs no read of a stored content) and sends only
// the messages that fit. It returns nil when last <= 0 or maxBytes < 0, and
// for a session it has never seen.
func (s *Store) HistoryWithin(ctx context.Context, session string, last, maxBytes int) ([]store.Message, error) {
	if session == "" {
		return nil, store.ErrEmptySession
	}
	if last <= 0 || maxBytes < 0 {
		return nil, nil
	}
	return s.history(ctx, `SELECT role, content FROM (
			SELECT seq, role, content, sum(octet_length(content)) OVER (ORDER BY seq DESC ROWS UNBOUNDED PRECEDING) AS total
			FROM wake_messages WHERE session = $1 ORDER BY seq DESC LIMIT $2
		) AS newest WHERE total <= $3 ORDER BY seq DESC`, session, last, maxBytes)
}

// history runs query, which selects role and content newest first, and
// returns its messages oldest first.
func (s *Store) history(ctx context.Context, query string, args ...any) ([]store.Message, error) {
	ctx, cancel, err := s.op(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	what := "read the history of a session"
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, s.closedOr(dbErr(what, err))
	}
	var msgs []store.Message
	var m store.Message
	var content []byte
	_, err = pgx.ForEachRow(rows, []any{&m.Role, &content}, func() error {
		m.Content = string(content)
		msgs = append(msgs, m)
		return nil
	})
	if err != nil {
		return nil, s.closedOr(dbErr(what, err))
	}
	slices.Reverse(msgs)
	return msgs, nil
}

// AppendTurn appends one turn, user's message then assistant's reply, to
// session's history, and trims the session to its budget
// (Options.SessionHistoryBytes) as store.History says: of its turns, newest
// first, those whose contents fit the budget together are kept, and the
// first that does not fit goes with every older one (a turn that alone
// does not fit too). Both statements are one batch, which PostgreSQL runs
// as one transaction: the turn is stored whole and trimmed, or not at all.
// Concurrent turns of a session (on any replica) never interleave, as the
// session's row is locked while its sequence numbers are taken. The
// session's last turn is stamped with the store's clock (Options.Now).
func (s *Store) AppendTurn(ctx context.Context, session string, user, assistant store.Message) error {
	if session == "" {
		return store.ErrEmptySession
	}
	if user.Role != store.RoleUser || assistant.Role != store.RoleAssistant {
		return fmt.Errorf("store: turn roles %q, %q: want %q, %q",
			user.Role, assistant.Role, store.RoleUser, store.RoleAssistant)
	}
	ctx, cancel, err := s.op(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	b := &pgx.Batch{}
	b.Queue(`WITH s AS (
			INSERT INTO wake_sessions (session, last_turn, next_seq) VALUES ($1, $2, 2)
			ON CONFLICT (session) DO UPDATE SET last_turn = EXCLUDED.last_turn, next_seq = wake_sessions.next_seq + 2
			RETURNING next_seq
		)
		INSERT INTO wake_messages (session, seq, role, content)
		SELECT $1, s.next_seq - 1, $3, $4::bytea FROM s
		UNION ALL SELECT $1, s.next_seq, $5, $6::bytea FROM s`,
		session, store.UTC(s.now()), user.Role, []byte(user.Content), assistant.Role, []byte(assistant.Content))
	// A turn's user message has an odd sequence number and its reply the
	// next, even one: the newest message past the budget, rounded up to
	// its turn's reply, goes with every older one.
	b.Queue(`DELETE FROM wake_messages WHERE session = $1 AND seq <= (
			SELECT max(seq + seq % 2) FROM (
				SELECT seq, sum(octet_length(content)) OVER (ORDER BY seq DESC ROWS UNBOUNDED PRECEDING) AS newer
				FROM wake_messages WHERE session = $1
			) AS m WHERE newer > $2)`, session, s.sessionMax)
	err = s.pool.SendBatch(ctx, b).Close()
	return s.closedOr(dbErr("store a turn", err))
}
