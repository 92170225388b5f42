package jobs

import (
	"context"
	"slices"
	"testing"

	"github.com/riverqueue/river/rivertype"
)

// TestWakeWaitsForStart: a wake made while the queue is not started (a
// job of a queue River has started, during the Start of the others) is
// made once the start is over, not during it: River's producers are not
// safe to wake while they are being started.
func TestWakeWaitsForStart(t *testing.T) {
	var woke []string
	p := &wakePilot{notify: func(_ context.Context, res []*rivertype.JobInsertResult) {
		for _, r := range res {
			woke = append(woke, r.Job.Queue)
		}
	}}
	p.wake([]string{QueueWebhooks, QueueCampaigns})
	p.wake([]string{QueueWebhooks})
	if len(woke) != 0 {
		t.Fatalf("woke %v before the start", woke)
	}
	p.start()
	slices.Sort(woke)
	if want := []string{QueueCampaigns, QueueWebhooks}; !slices.Equal(woke, want) {
		t.Fatalf("at the start woke %v, want %v once each", woke, want)
	}
	woke = nil
	p.wake([]string{QueueCampaigns})
	if !slices.Equal(woke, []string{QueueCampaigns}) {
		t.Fatalf("started, a wake woke %v", woke)
	}
	woke = nil
	p.stop()
	p.wake([]string{QueueCampaigns})
	if len(woke) != 0 {
		t.Fatalf("stopped, a wake woke %v", woke)
	}
}
