package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
	"unicode/utf8"

	bolt "go.etcd.io/bbolt"
)

// The roles of a turn's two messages.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Message is one message of a session's history.
type Message struct {
	Role    string `json:"role"` // "user" or "assistant"
	Content string `json:"content"`
}

// ErrEmptySession is returned by every method of a backend given an empty
// session id.
var ErrEmptySession = errors.New("store: empty session id")

// History returns the last last messages of session, oldest first. It
// returns nil when last <= 0, and nil (no error) for a session it has never
// seen. It reads only the messages it returns.
func (s *Store) History(ctx context.Context, session string, last int) ([]Message, error) {
	return s.history(ctx, session, last, math.MaxInt)
}

// HistoryWithin returns the newest messages of session, at most last of
// them, whose contents total at most maxBytes bytes, oldest first: the
// messages of History(session, last) from the newest back to the first
// that would take the total past maxBytes, which ends them (nothing older
// is returned, so there is no hole). It reads newest first and stops there:
// a session of huge messages costs the messages that fit, and at most one
// more, whatever last is; the one that does not fit is not even decoded
// when its stored form gives its size (see contentSize). It returns nil
// when last <= 0 or maxBytes < 0, and for a session it has never seen.
func (s *Store) HistoryWithin(ctx context.Context, session string, last, maxBytes int) ([]Message, error) {
	if maxBytes < 0 {
		if session == "" {
			return nil, ErrEmptySession
		}
		return nil, nil
	}
	return s.history(ctx, session, last, maxBytes)
}

// history is HistoryWithin, with maxBytes >= 0.
func (s *Store) history(ctx context.Context, session string, last, maxBytes int) ([]Message, error) {
	if session == "" {
		return nil, ErrEmptySession
	}
	if last <= 0 {
		return nil, nil
	}
	var msgs []Message
	err := s.view(ctx, func(tx *bolt.Tx) error {
		b, err := messages(tx, session)
		if b == nil || err != nil {
			return err
		}
		room := maxBytes
		c := b.Cursor()
		for k, v := c.Last(); k != nil && len(msgs) < last; k, v = c.Prev() {
			if len(v) > room {
				// It may not fit (a plain one's content is shorter than
				// v): when its stored form says it does not, stop before
				// decoding it.
				if n, ok := contentSize(v); ok && n > room {
					return nil
				}
			}
			var m Message
			if err := json.Unmarshal(v, &m); err != nil {
				return fmt.Errorf("store: session %q message %x: %w", session, k, err)
			}
			if len(m.Content) > room {
				return nil
			}
			room -= len(m.Content)
			msgs = append(msgs, m)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Reverse(msgs)
	return msgs, nil
}

// The stored forms of a message whose role and content json.Marshal copies
// as they are: the prefix of each role, and the suffix.
var (
	plainPrefixes = [][]byte{[]byte(`{"role":"user","content":"`), []byte(`{"role":"assistant","content":"`)}
	plainSuffix   = []byte(`"}`)
)

// contentSize is the length of the content of the stored message v without
// decoding it, when v is in the plain form AppendTurn writes for a message
// of either role whose content needs no escape: the prefix, the content's
// bytes as they are (valid UTF-8, no quote, no backslash, no control
// character: a JSON string that decodes to exactly those bytes), then the
// suffix. ok is false for any other form (an escape, bytes that are not
// UTF-8, another field): then only decoding tells.
func contentSize(v []byte) (n int, ok bool) {
	for _, prefix := range plainPrefixes {
		rest, found := bytes.CutPrefix(v, prefix)
		if !found {
			continue
		}
		content, found := bytes.CutSuffix(rest, plainSuffix)
		if !found || !utf8.Valid(content) {
			return 0, false
		}
		for _, c := range content {
			if c < 0x20 || c == '"' || c == '\\' {
				return 0, false
			}
		}
		return len(content), true
	}
	return 0, false
}

// DefaultSessionHistoryBytes is the session budget of a store whose options
// give none: 1 MiB, four times the default [agent] history_bytes.
const DefaultSessionHistoryBytes = 1 << 20

// AppendTurn appends one turn, user's message then assistant's reply, to
// session's history in one transaction: the turn is stored whole or not at
// all, and concurrent turns never interleave. user.Role must be "user" and
// assistant.Role "assistant". The session's last turn is stamped with the
// store's clock (Options.Now), which Prune ages it by.
//
// In the same transaction the session is trimmed to its budget
// (Options.SessionHistoryBytes): of its turns, newest first, those whose
// stored messages (their JSON) fit the budget together are kept, and the
// first that does not fit is deleted with every older one. A turn that
// alone does not fit is not kept either, so the session is left with no
// message (and its last turn stamped): what a next turn is sent then starts
// afresh rather than with a hole. Sequence numbers are never reused.
func (s *Store) AppendTurn(ctx context.Context, session string, user, assistant Message) error {
	if session == "" {
		return ErrEmptySession
	}
	if user.Role != RoleUser || assistant.Role != RoleAssistant {
		return fmt.Errorf("store: turn roles %q, %q: want %q, %q",
			user.Role, assistant.Role, RoleUser, RoleAssistant)
	}
	var values [2][]byte
	for i, m := range []Message{user, assistant} {
		v, err := encodeMessage(m)
		if err != nil {
			return fmt.Errorf("store: session %q message: %w", session, err)
		}
		values[i] = v
	}
	return s.update(ctx, func(tx *bolt.Tx) error {
		sessions, err := bucket(tx, bucketSessions)
		if err != nil {
			return err
		}
		sb, err := sessions.CreateBucketIfNotExists([]byte(session))
		if err != nil {
			return fmt.Errorf("store: session %q: %w", session, err)
		}
		b, err := sb.CreateBucketIfNotExists(bucketMessages)
		if err != nil {
			return fmt.Errorf("store: session %q messages: %w", session, err)
		}
		if err := sb.Put(keyLastTurn, timeValue(s.now())); err != nil {
			return fmt.Errorf("store: session %q last turn: %w", session, err)
		}
		for _, v := range values {
			seq, err := b.NextSequence()
			if err != nil {
				return fmt.Errorf("store: session %q sequence: %w", session, err)
			}
			if err := b.Put(seqKey(seq), v); err != nil {
				return fmt.Errorf("store: session %q message: %w", session, err)
			}
		}
		if err := trim(b, s.sessionMax); err != nil {
			return fmt.Errorf("store: session %q trim: %w", session, err)
		}
		return nil
	})
}

// encodeMessage is m as AppendTurn stores it: JSON, with <, > and & as they
// are (json.Marshal would make each six bytes), so that a message's stored
// size is about its content's for the session budget.
func encodeMessage(m Message) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// trim deletes the oldest messages of b, a session's, so that what is left
// takes at most budget bytes as stored, in whole turns: it walks back from
// the newest, a turn (two messages) at a time, and the first turn that
// would take the total past budget goes with everything older. Only the
// kept messages are read: the walk stops at the first that does not fit.
func trim(b *bolt.Bucket, budget int) error {
	c := b.Cursor()
	total := 0
	var cut []byte // the newest key that goes, with every older one
	for k, v := c.Last(); k != nil; k, v = c.Prev() {
		newer, size := k, len(v) // a turn's assistant message
		if k, v = c.Prev(); k != nil {
			size += len(v) // ... and its user message
		}
		if total+size > budget {
			cut = newer
			break
		}
		total += size
		if k == nil {
			break
		}
	}
	if cut == nil {
		return nil
	}
	var doomed [][]byte
	for k, _ := c.Seek(cut); k != nil; k, _ = c.Prev() {
		doomed = append(doomed, bytes.Clone(k))
	}
	for _, k := range doomed {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// messages returns session's messages bucket, nil when the session has none.
func messages(tx *bolt.Tx, session string) (*bolt.Bucket, error) {
	sessions, err := bucket(tx, bucketSessions)
	if err != nil {
		return nil, err
	}
	sb := sessions.Bucket([]byte(session))
	if sb == nil {
		return nil, nil
	}
	return sb.Bucket(bucketMessages), nil
}

func seqKey(seq uint64) []byte {
	return binary.BigEndian.AppendUint64(nil, seq)
}

// timeValue is t as a session's lastTurn value: Unix nanoseconds,
// big-endian.
func timeValue(t time.Time) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(t.UnixNano()))
}

// lastTurn reads a session's lastTurn value; ok is false when it has none
// (a session stored before sessions were stamped) or it is malformed.
func lastTurn(sb *bolt.Bucket) (t time.Time, ok bool) {
	v := sb.Get(keyLastTurn)
	if len(v) != 8 {
		return time.Time{}, false
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(v))).UTC(), true
}
