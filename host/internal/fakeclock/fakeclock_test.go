package fakeclock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/wakeonchat/wakeonchat/host/clock"
	"github.com/wakeonchat/wakeonchat/host/internal/fakeclock"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 9, 9, 12, 0, 0, 0, time.UTC)

// fired reports what ch holds without waiting: its time, or false.
func fired(ch <-chan time.Time) (time.Time, bool) {
	select {
	case v := <-ch:
		return v, true
	default:
		return time.Time{}, false
	}
}

func TestRate(t *testing.T) {
	if r := clock.Rate(fakeclock.New(t0)); r != 0 {
		t.Errorf("clock.Rate of a fake clock = %v, want 0", r)
	}
}

func TestFakeNowAdvanceSet(t *testing.T) {
	f := fakeclock.New(t0)
	if got := f.Now(); !got.Equal(t0) {
		t.Fatalf("New(t0).Now() = %v, want %v", got, t0)
	}
	f.Advance(90 * time.Second)
	if got, want := f.Now(), t0.Add(90*time.Second); !got.Equal(want) {
		t.Fatalf("after Advance(90s) Now() = %v, want %v", got, want)
	}
	f.Set(t0.Add(-time.Hour))
	if got, want := f.Now(), t0.Add(-time.Hour); !got.Equal(want) {
		t.Fatalf("after Set(t0-1h) Now() = %v, want %v", got, want)
	}
	var zero fakeclock.Clock
	if got := zero.Now(); !got.IsZero() {
		t.Fatalf("zero Clock Now() = %v, want the zero time", got)
	}
}

func TestFakeAfterNonPositiveFiresAtOnce(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second} {
		f := fakeclock.New(t0)
		got, ok := fired(f.After(d))
		if !ok {
			t.Fatalf("After(%v) did not fire at once", d)
		}
		if !got.Equal(t0) {
			t.Errorf("After(%v) sent %v, want now %v", d, got, t0)
		}
		if n := f.Waiters(); n != 0 {
			t.Errorf("After(%v) left %d waiters pending, want 0", d, n)
		}
	}
}

func TestFakeAdvanceFiresDueWaiters(t *testing.T) {
	tests := []struct {
		name    string
		after   []time.Duration
		advance []time.Duration
		want    []bool // which After channels hold a value at the end
	}{
		{"before the deadline", []time.Duration{time.Minute}, []time.Duration{time.Minute - time.Nanosecond}, []bool{false}},
		{"exactly at the deadline", []time.Duration{time.Minute}, []time.Duration{time.Minute}, []bool{true}},
		{"past the deadline", []time.Duration{time.Minute}, []time.Duration{time.Hour}, []bool{true}},
		{"in steps", []time.Duration{time.Minute}, []time.Duration{30 * time.Second, 30 * time.Second}, []bool{true}},
		{"only the due ones", []time.Duration{3 * time.Minute, time.Minute, 2 * time.Minute}, []time.Duration{2 * time.Minute}, []bool{false, true, true}},
		{"backwards fires nothing", []time.Duration{time.Minute}, []time.Duration{-time.Hour, time.Minute}, []bool{false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := fakeclock.New(t0)
			chans := make([]<-chan time.Time, len(tt.after))
			for i, d := range tt.after {
				chans[i] = f.After(d)
			}
			for _, d := range tt.advance {
				f.Advance(d)
			}
			var got []bool
			for i, ch := range chans {
				v, ok := fired(ch)
				got = append(got, ok)
				if want := t0.Add(tt.after[i]); ok && !v.Equal(want) {
					t.Errorf("waiter %d sent %v, want its deadline %v", i, v, want)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("fired (-want +got):\n%s", diff)
			}
			pending := 0
			for _, ok := range tt.want {
				if !ok {
					pending++
				}
			}
			if n := f.Waiters(); n != pending {
				t.Errorf("Waiters() = %d, want %d", n, pending)
			}
		})
	}
}

func TestFakeSetFiresDueWaiters(t *testing.T) {
	f := fakeclock.New(t0)
	early, late := f.After(time.Minute), f.After(time.Hour)
	f.Set(t0.Add(10 * time.Minute))
	if _, ok := fired(early); !ok {
		t.Error("Set past a deadline did not fire its waiter")
	}
	if _, ok := fired(late); ok {
		t.Error("Set before a deadline fired its waiter")
	}
}

func TestFakeBlockUntilWaiters(t *testing.T) {
	f := fakeclock.New(t0)
	done := make(chan time.Time)
	go func() {
		v := <-f.After(time.Minute)
		done <- v
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := f.BlockUntilWaiters(ctx, 1); err != nil {
		t.Fatalf("BlockUntilWaiters(1) = %v, want nil once the goroutine waits", err)
	}
	f.Advance(time.Minute)
	if got, want := <-done, t0.Add(time.Minute); !got.Equal(want) {
		t.Errorf("the goroutine received %v, want %v", got, want)
	}
	if err := f.BlockUntilWaiters(ctx, 0); err != nil {
		t.Errorf("BlockUntilWaiters(0) = %v, want nil at once", err)
	}
}

func TestFakeBlockUntilWaitersHonoursContext(t *testing.T) {
	f := fakeclock.New(t0)
	f.After(time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := f.BlockUntilWaiters(ctx, 2); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("BlockUntilWaiters(2) with one waiter = %v, want context.DeadlineExceeded", err)
	}
}

// TestFakeConcurrent is for -race: goroutines wait while the test advances.
func TestFakeConcurrent(t *testing.T) {
	f := fakeclock.New(t0)
	const n = 50
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-f.After(time.Duration(i+1) * time.Second)
			_ = f.Now()
		}()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := f.BlockUntilWaiters(ctx, n); err != nil {
		t.Fatal(err)
	}
	for range n {
		f.Advance(time.Second)
	}
	wg.Wait()
	if got := f.Waiters(); got != 0 {
		t.Errorf("Waiters() = %d after every deadline passed, want 0", got)
	}
}
