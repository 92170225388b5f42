package jobs

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

type heldDeliverer struct{ err error }

func (d heldDeliverer) Deliver(context.Context, int64, int64, int, bool) error { return d.err }

// A message held for its sending window (D17) snoozes its job until the
// opening instead of failing an attempt.
func TestDeliverWorkerSnoozesHeld(t *testing.T) {
	job := &river.Job[DeliverMessageArgs]{JobRow: &rivertype.JobRow{Attempt: 1, MaxAttempts: 10}}
	w := &deliverWorker{d: heldDeliverer{&Held{Until: time.Now().Add(2 * time.Hour), Wait: 2 * time.Hour}}}
	var snooze *river.JobSnoozeError
	if err := w.Work(context.Background(), job); !errors.As(err, &snooze) || snooze.Duration != 2*time.Hour {
		t.Errorf("Work = %v, want a 2 h snooze", err)
	}
	other := errors.New("temporary")
	w.d = heldDeliverer{other}
	if err := w.Work(context.Background(), job); err != other {
		t.Errorf("Work = %v, want the deliverer's error unchanged", err)
	}
}
