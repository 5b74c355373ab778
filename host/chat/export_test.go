package chat

// NewOnTurns is New with ts running every turn in place of Config.Service:
// the tests of the door's codec run it on a recording fake of the turn
// service.
func NewOnTurns(cfg Config, ts turns) *Server {
	s := New(cfg)
	s.turns = ts
	return s
}
