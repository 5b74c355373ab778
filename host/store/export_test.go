package store

// NoSync is Options.noSync for the external tests (the conformance suite),
// which write thousands of transactions and do not test durability.
func NoSync(o Options) Options {
	o.noSync = true
	return o
}
