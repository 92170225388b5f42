package jobs

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

type stepSender struct {
	steps []CampaignProgress
	calls int
}

func (s *stepSender) SendCampaignBatch(context.Context, int64, int64) (CampaignProgress, error) {
	p := s.steps[min(s.calls, len(s.steps)-1)]
	s.calls++
	return p, nil
}

func campaignJob() *river.Job[SendCampaignArgs] {
	return &river.Job[SendCampaignArgs]{JobRow: &rivertype.JobRow{Attempt: 1, MaxAttempts: 25}, Args: SendCampaignArgs{CampaignID: 1, BrandID: 1}}
}

// The campaign job (D16) sends batch after batch until the campaign is
// done, sleeps through short waits (pacing, claims in flight) and snoozes
// through long ones (messages held for their window), at most
// campaignMaxSnooze at a time.
func TestCampaignWorker(t *testing.T) {
	s := &stepSender{steps: []CampaignProgress{{Sent: 500}, {Sent: 500, Wait: 10 * time.Millisecond}, {Wait: 20 * time.Millisecond}, {Done: true}}}
	w := newCampaignWorker(s, time.Minute)
	if err := w.Work(context.Background(), campaignJob()); err != nil || s.calls != 4 {
		t.Errorf("Work = %v after %d batches, want nil after 4", err, s.calls)
	}
	s = &stepSender{steps: []CampaignProgress{{Sent: 3}, {Wait: 2 * time.Hour}}}
	var snooze *river.JobSnoozeError
	if err := newCampaignWorker(s, time.Minute).Work(context.Background(), campaignJob()); !errors.As(err, &snooze) || snooze.Duration != campaignMaxSnooze {
		t.Errorf("Work = %v, want a snooze of %v for a 2 h hold", err, campaignMaxSnooze)
	}
	s = &stepSender{steps: []CampaignProgress{{Wait: 2 * time.Second}}}
	if err := newCampaignWorker(s, time.Minute).Work(context.Background(), campaignJob()); !errors.As(err, &snooze) || snooze.Duration != 2*time.Second {
		t.Errorf("Work = %v, want a snooze of 2 s", err)
	}
	// A run hands the job back before the rescuer could take it for a
	// stuck one.
	if w := newCampaignWorker(s, 3*time.Second); w.run != time.Second || w.timeout != 2*time.Second {
		t.Errorf("rescue after 3 s: run %v, timeout %v; want 1 s, 2 s", w.run, w.timeout)
	}
	if (SendCampaignArgs{}).InsertOpts().Queue != QueueCampaigns {
		t.Error("the campaign job is not in the campaigns queue")
	}
}

// TestCampaignRetrySoon: a failed run is retried within seconds, not
// River's attempt⁴ backoff (attempt 5 would wait ~10 minutes while the
// campaign's messages sit queued).
func TestCampaignRetrySoon(t *testing.T) {
	w := newCampaignWorker(nil, time.Minute)
	for _, tc := range []struct {
		attempt int
		want    time.Duration
	}{{1, time.Second}, {3, 3 * time.Second}, {5, 5 * time.Second}, {24, campaignMaxRetryWait}} {
		got := time.Until(w.NextRetry(&river.Job[SendCampaignArgs]{JobRow: &rivertype.JobRow{Attempt: tc.attempt}}))
		if got > tc.want || got < tc.want-time.Second {
			t.Errorf("attempt %d: retry in %v, want %v", tc.attempt, got, tc.want)
		}
	}
}
