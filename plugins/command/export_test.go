package command

import "time"

// SetWaitDelay makes r wait d, instead of waitDelay, for a command's
// output once the command has exited: the test of a background process
// that keeps the output open waits d rather than a second.
func SetWaitDelay(r *Runner, d time.Duration) { r.waitDelay = d }
