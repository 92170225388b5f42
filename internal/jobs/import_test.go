package jobs

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

type fakeRunner struct {
	done  bool
	err   error
	until time.Time
	final bool
}

func (f *fakeRunner) Work(ctx context.Context, brandID, importID int64, until time.Time, final bool) (bool, error) {
	f.until, f.final = until, final
	return f.done, f.err
}

// An import runs in slices that end well before the job could be taken
// over as stuck; an unfinished slice snoozes the job (spending no attempt),
// and so does a node stopping; other errors are retried.
func TestImportWorker(t *testing.T) {
	job := func(attempt int) *river.Job[ImportUsersArgs] {
		return &river.Job[ImportUsersArgs]{JobRow: &rivertype.JobRow{Attempt: attempt, MaxAttempts: 10},
			Args: ImportUsersArgs{BrandID: 1, ImportID: 2}}
	}
	if w := newImportWorker(nil, time.Minute); w.slice != 15*time.Second || w.Timeout(job(1)) != 30*time.Second {
		t.Errorf("rescue after 1m: slice %v timeout %v, want 15s and 30s", w.slice, w.Timeout(job(1)))
	}
	if w := newImportWorker(nil, 3*time.Second); w.slice != time.Second || w.Timeout(job(1)) >= 3*time.Second {
		t.Errorf("rescue after 3s: slice %v timeout %v, want a timeout under the rescue time", w.slice, w.Timeout(job(1)))
	}

	isSnooze := func(err error) bool {
		var s *river.JobSnoozeError
		return errors.As(err, &s) && s.Duration == 0
	}
	boom := errors.New("boom")
	for _, tc := range []struct {
		name    string
		done    bool
		err     error
		cancel  bool
		attempt int
		snooze  bool
		wantErr error
	}{
		{name: "Done", done: true, attempt: 1},
		{name: "SliceOver", done: false, attempt: 1, snooze: true},
		{name: "Error", err: boom, attempt: 1, wantErr: boom},
		{name: "Stopping", err: context.Canceled, cancel: true, attempt: 1, snooze: true},
		{name: "LastAttempt", err: boom, attempt: 10, wantErr: boom},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &fakeRunner{done: tc.done, err: tc.err}
			w := newImportWorker(r, time.Minute)
			ctx, cancel := context.WithCancel(t.Context())
			if tc.cancel {
				cancel()
			}
			defer cancel()
			start := time.Now()
			err := w.Work(ctx, job(tc.attempt))
			switch {
			case tc.snooze && !isSnooze(err):
				t.Errorf("error %v, want a snooze", err)
			case !tc.snooze && !errors.Is(err, tc.wantErr) && !(err == nil && tc.wantErr == nil):
				t.Errorf("error %v, want %v", err, tc.wantErr)
			}
			if r.until.Before(start.Add(w.slice)) || r.until.After(time.Now().Add(w.slice)) {
				t.Errorf("until %v, want now + %v", r.until, w.slice)
			}
			if r.final != (tc.attempt == 10) {
				t.Errorf("final = %v on attempt %d of 10", r.final, tc.attempt)
			}
		})
	}
}
