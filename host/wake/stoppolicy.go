package wake

import "time"

// StopPolicy is when the host stops a pod it woke (Config.Stops). A zero
// duration never stops.
type StopPolicy struct {
	// AfterIdle stops the pod once its model has answered nothing and
	// held nothing for this long ([[backends]] stop_after_idle).
	AfterIdle time.Duration
	// UnservedAfter stops a woken pod that became ready and served nobody
	// this long after every user who asked has gone ([[backends]]
	// stop_unserved_after).
	UnservedAfter time.Duration
}
