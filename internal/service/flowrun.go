package service

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/sendwindow"
	"github.com/parleyhq/parley/internal/store"
)

// Running flows (D21). A run's next step is due at next_at, in the
// database; a runner on each worker node takes the due runs a batch at a
// time, in one transaction: each run goes through its steps until a wait
// (or its end), writing its messages, its new step and next_at, and the
// stats together. The transaction is what makes each step happen once:
// on PostgreSQL the batch's runs are locked, and other nodes skip them;
// a crash rolls the whole batch back, to be done again. Between batches
// the runner sleeps until the earliest next_at (one index probe), so
// waiting runs cost nothing.

const (
	// flowBatch is how many due runs one transaction takes: as the
	// campaign sender's batch on SQLite, a transaction that holds the one
	// writer for milliseconds.
	flowBatch = 250
	// flowPoll is the longest a runner sleeps: the runs another node
	// enters are due at once, and this node sees them within it.
	flowPoll = time.Second
	// flowWatchEvery is how often the runner looks for flows whose
	// sender is gone (ResumeFlowSenders): rarely, since a sender job ends
	// only after all its attempts.
	flowWatchEvery = 30 * time.Second
)

// Exit reasons of runs (D21 exit_reason).
const (
	ExitBranch         = "branch_condition_false"
	ExitStop           = "stop"
	ExitOptedOut       = "opted_out"
	ExitContactDeleted = "contact_deleted"
	ExitFlowDeleted    = "flow_deleted"
	ExitError          = "error"
)

// maxRunFailures is how many times a run's step may fail before the run
// ends exited with ExitError; in between, the run is put off, a minute
// after its first failure, doubling up to an hour (about four hours in
// all), so that a failure that passes (the database unreachable for a
// while) costs a delay and one that does not (a flow's stored steps that
// no longer decode) ends the run.
const maxRunFailures = 10

// runRetryDelay is how long a run waits after its nth failure.
func runRetryDelay(n int) time.Duration {
	return min(time.Minute<<min(n-1, 6), time.Hour)
}

// wakeFlows tells this node's runner that a run may be due now.
func (s *Service) wakeFlows() {
	select {
	case s.flowWake <- struct{}{}:
	default:
	}
}

// RunFlows runs due flow steps until ctx ends (D21). Between batches it
// sleeps until the earliest next_at, at most flowPoll, or until this
// node enters a run; after a flowPoll with nothing due it only probes
// next_at (a read) before taking a batch (a write transaction): an idle
// node, or one whose runs all wait, costs next to nothing (issue #35).
// Every flowWatchEvery it queues the senders flows lack
// (ResumeFlowSenders).
func (s *Service) RunFlows(ctx context.Context) {
	var watched time.Time
	run := true // a batch may be due
	for ctx.Err() == nil {
		if time.Since(watched) >= flowWatchEvery {
			if _, err := s.ResumeFlowSenders(ctx, watched.IsZero()); err != nil && ctx.Err() == nil {
				s.logger.Error("flows: resuming senders", "err", err)
			}
			watched = time.Now()
		}
		if run {
			n, err := s.RunDueFlowSteps(ctx)
			if err != nil && ctx.Err() == nil {
				s.logger.Error("flows: running due steps", "err", err)
			}
			if err == nil && n == flowBatch {
				continue // more may be due
			}
		}
		wait := flowPoll
		at, ok, err := s.db.NextDue(ctx)
		if err == nil && ok {
			wait = min(wait, max(at.Sub(s.db.Now()), 0))
		}
		if err == nil && wait == 0 {
			run = true
			continue
		}
		t := time.NewTimer(max(wait, 10*time.Millisecond))
		select {
		case <-ctx.Done():
		case <-s.flowWake:
			run = true
		case <-t.C:
			// Slept until a run's next_at, or unsure: take a batch; else
			// probe next_at first.
			run = err != nil || wait < flowPoll
		}
		t.Stop()
	}
}

// ResumeFlowSenders queues a sender for every flow that may have
// messages to send and no sender job that could still run
// (store.FlowsWithoutSender: from its queued messages at start, from
// flow_senders after), and returns how many it queued. The runner calls
// it as it starts and every flowWatchEvery: a flow whose sender
// River discarded would otherwise never send again, since its
// flow_senders row tells the runners one is running. A second sender of
// a flow is harmless: the claim gives each message to one batch, and the
// one that ends the row ends the other (flowIdle).
func (s *Service) ResumeFlowSenders(ctx context.Context, start bool) (int, error) {
	flows, err := s.db.FlowsWithoutSender(ctx, start)
	if err != nil || len(flows) == 0 {
		return 0, err
	}
	err = s.db.WithBackgroundTx(ctx, func(tx *store.Tx) error {
		for flowID, brandID := range flows {
			if _, err := tx.WantFlowSender(ctx, flowID); err != nil {
				return err
			}
			s.jobsOf(tx).FlowSend(brandID, flowID)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	for flowID, brandID := range flows {
		s.logger.Warn("flows: a flow's messages had no sender; queued one", "brand_id", brandID, "flow_id", flowID)
	}
	return len(flows), nil
}

// RunDueFlowSteps does the due steps of one batch of runs and returns how
// many runs it took.
//
// A run whose step fails rolls its batch back; that run alone is then put
// off (failRun), and the next batch does the others' steps without it: one
// bad run never holds up the rest.
func (s *Service) RunDueFlowSteps(ctx context.Context) (int, error) {
	n := 0
	var failed *store.DueRun
	// A background write: the API's writes and an import's batches go
	// first (YieldWriter).
	err := s.db.WithBackgroundTx(ctx, func(tx *store.Tx) error {
		runs, err := tx.DueRuns(ctx, flowBatch)
		if err != nil {
			return err
		}
		n, failed = len(runs), nil
		r := &flowRunner{s: s, tx: tx, counts: map[int64]map[int]store.StepCounts{},
			steps: map[[2]int64][]parley.FlowStep{}, settings: map[int64]*parley.BrandSettings{},
			bodies: map[[3]int64]bodyRenderer{}, wrote: map[int64]int64{}}
		ids := make([]int64, len(runs))
		for i, run := range runs {
			ids[i] = run.UserID
		}
		if r.users, err = tx.FindUsersByIDs(ctx, ids); err != nil {
			return err
		}
		for _, run := range runs {
			if err := r.advance(ctx, run); err != nil {
				failed = run
				return fmt.Errorf("flow %d run %d: %w", run.FlowID, run.ID, err)
			}
		}
		if err := r.write(ctx); err != nil {
			return err
		}
		// The flows' messages go out by each flow's one sender job, queued
		// here unless one is queued or running already.
		for flowID, brandID := range r.wrote {
			queue, err := tx.WantFlowSender(ctx, flowID)
			if err != nil {
				return err
			}
			if queue {
				s.jobsOf(tx).FlowSend(brandID, flowID)
			}
		}
		return tx.CountSteps(ctx, r.counts)
	})
	if err != nil && failed != nil && ctx.Err() == nil {
		return n, s.failRun(ctx, failed, err)
	}
	return n, err
}

// failRun puts a run whose step failed with cause off, or ends it exited
// with ExitError after maxRunFailures.
func (s *Service) failRun(ctx context.Context, run *store.DueRun, cause error) error {
	n := run.Failures + 1
	s.logger.Error("flows: a run's step failed", "flow", run.FlowID, "run", run.ID, "step", run.Step, "failures", n, "err", cause)
	return s.db.WithTx(ctx, func(tx *store.Tx) error {
		if n < maxRunFailures {
			return tx.PutOffRun(ctx, run.ID, tx.Now().Add(runRetryDelay(n)))
		}
		reason := ExitError
		_, err := tx.EndRun(ctx, run, parley.RunExited, &reason)
		return err
	})
}

// flowRunner does one batch's steps in its transaction.
type flowRunner struct {
	s  *Service
	tx *store.Tx
	// counts are the batch's step counts, by flow and step.
	counts map[int64]map[int]store.StepCounts
	// steps are the decoded steps of each flow version met.
	steps map[[2]int64][]parley.FlowStep
	// settings are the brand settings met.
	settings map[int64]*parley.BrandSettings
	// bodies are the parsed bodies of send steps, by flow, version and
	// step: parsed once a batch, not once a message.
	bodies map[[3]int64]bodyRenderer
	// wrote holds the flows the batch wrote messages of, with their brands.
	wrote map[int64]int64
	// users are the runs' contacts, read in one statement.
	users map[int64]*parley.User
	// messages and moves are the batch's writes, made together by write:
	// a statement per chunk, not one per run (on PostgreSQL a round trip
	// each was the cost of a flow's sends).
	messages []*store.FlowMessage
	moves    []store.RunMove
	ends     []*store.RunEnd
}

// write stores the batch's messages, moves its waiting runs and ends
// those that ended; it counts each send step's message sent, or skipped
// when its step had written it already, and emits message.queued and
// flow.completed.
func (r *flowRunner) write(ctx context.Context) error {
	if err := r.tx.InsertFlowMessages(ctx, r.messages); err != nil {
		return err
	}
	for _, fm := range r.messages {
		m := fm.M
		r.count(*m.FlowID, fm.Step, func(c *store.StepCounts) {
			if fm.Written {
				c.Sent++
			} else {
				c.Skipped++
			}
		})
		if !fm.Written {
			continue
		}
		r.wrote[*m.FlowID] = m.BrandID
		if err := r.s.emit(ctx, r.tx, m.BrandID, parley.EventMessageQueued, m); err != nil {
			return err
		}
	}
	if err := r.tx.MoveRuns(ctx, r.moves); err != nil {
		return err
	}
	if err := r.tx.EndRuns(ctx, r.ends); err != nil {
		return err
	}
	// A completed run emits flow.completed (D21).
	now := parley.NewTime(r.tx.Now())
	for _, e := range r.ends {
		if !e.Ended || e.Status != parley.RunCompleted {
			continue
		}
		run := e.Run
		run.Status, run.EndedAt, run.NextAt = e.Status, &now, nil
		if err := r.s.emit(ctx, r.tx, run.BrandID, parley.EventFlowCompleted, run.FlowRun); err != nil {
			return err
		}
	}
	return nil
}

func (r *flowRunner) count(flowID int64, step int, f func(*store.StepCounts)) {
	m := r.counts[flowID]
	if m == nil {
		m = map[int]store.StepCounts{}
		r.counts[flowID] = m
	}
	c := m[step]
	f(&c)
	m[step] = c
}

func (r *flowRunner) stepsOf(run *store.DueRun) ([]parley.FlowStep, error) {
	k := [2]int64{run.FlowID, run.Version}
	if st, ok := r.steps[k]; ok {
		return st, nil
	}
	st, err := store.DecodeSteps(run.Steps)
	if err != nil {
		return nil, err
	}
	r.steps[k] = st
	return st, nil
}

func (r *flowRunner) settingsOf(ctx context.Context, brandID int64) (*parley.BrandSettings, error) {
	if set, ok := r.settings[brandID]; ok {
		return set, nil
	}
	set, err := r.tx.BrandSettings(ctx, brandID)
	if err != nil {
		return nil, err
	}
	r.settings[brandID] = set
	return set, nil
}

// advance takes run through its steps from run.Step until a wait or its
// end.
func (r *flowRunner) advance(ctx context.Context, run *store.DueRun) error {
	steps, err := r.stepsOf(run)
	if err != nil {
		return err
	}
	u := r.users[run.UserID]
	if u == nil || u.BrandID != run.BrandID {
		return r.end(run, parley.RunExited, ExitContactDeleted)
	}
	now := r.tx.Now()
	for {
		if run.Step >= len(steps) {
			return r.end(run, parley.RunCompleted, "")
		}
		st := steps[run.Step]
		r.count(run.FlowID, run.Step, func(c *store.StepCounts) { c.Reached++ })
		switch st.Type {
		case parley.StepSend:
			// A message to write counts as sent or skipped once written.
			if err := r.send(ctx, run, st, u); err != nil {
				return err
			}
			run.Step++
		case parley.StepWait:
			r.moves = append(r.moves, store.RunMove{RunID: run.ID, Step: run.Step + 1,
				Next: now.Add(time.Duration(st.Seconds) * time.Second)})
			return nil
		case parley.StepWaitUntil:
			set, err := r.settingsOf(ctx, run.BrandID)
			if err != nil {
				return err
			}
			r.moves = append(r.moves, store.RunMove{RunID: run.ID, Step: run.Step + 1,
				Next: nextClock(now, userZone(u, set), st.Time)})
			return nil
		case parley.StepBranch:
			ok, err := r.holds(ctx, run, st.If, u)
			if err != nil {
				return err
			}
			switch {
			case ok:
				run.Step++
			case st.ElseStep != nil:
				run.Step = *st.ElseStep
			default:
				return r.end(run, parley.RunExited, ExitBranch)
			}
		default:
			return fmt.Errorf("unknown step type %q", st.Type)
		}
	}
}

// end ends the run, with the batch's other ends in write.
func (r *flowRunner) end(run *store.DueRun, status, reason string) error {
	var why *string
	if reason != "" {
		why = &reason
	}
	r.ends = append(r.ends, &store.RunEnd{Run: run, Status: status, Reason: why})
	return nil
}

// send queues the message of a send step for write, or counts it skipped
// (D21): a MARKETING message needs consent true now, and room under the
// frequency cap; no message goes to a contact who opted out.
func (r *flowRunner) send(ctx context.Context, run *store.DueRun, st parley.FlowStep, u *parley.User) error {
	ok, err := r.sendable(ctx, run, st, u)
	if err != nil {
		return err
	}
	if !ok {
		r.count(run.FlowID, run.Step, func(c *store.StepCounts) { c.Skipped++ })
		return nil
	}
	flowID := run.FlowID
	m := &parley.Message{BrandID: run.BrandID, UserID: u.ID, Direction: parley.DirectionOutbound,
		Status: parley.StatusQueued, Body: r.render(run, st.Body, u), MediaItemUUIDs: st.MediaItemUUIDs,
		Type: st.MessageType, DateCreated: parley.NewTime(r.tx.Now()), FlowID: &flowID}
	r.messages = append(r.messages, &store.FlowMessage{M: m, RunID: run.ID, Step: run.Step})
	return nil
}

// sendable reports whether the contact may get the send step's message.
func (r *flowRunner) sendable(ctx context.Context, run *store.DueRun, st parley.FlowStep, u *parley.User) (bool, error) {
	consent := u.MessagingConsent
	if consent != nil && !*consent {
		return false, nil
	}
	if st.MessageType != parley.TypeMarketing {
		return true, nil
	}
	if consent == nil {
		return false, nil
	}
	set, err := r.settingsOf(ctx, run.BrandID)
	if err != nil {
		return false, err
	}
	c := set.FrequencyCap
	if c == nil {
		return true, nil
	}
	n, err := r.tx.MarketingSentSince(ctx, run.BrandID, u.ID, r.tx.Now().Add(-time.Duration(c.PerHours)*time.Hour))
	return err == nil && n < c.MaxMessages, err
}

// holds evaluates a branch's condition for the run's contact (D21).
func (r *flowRunner) holds(ctx context.Context, run *store.DueRun, c *parley.FlowCondition, u *parley.User) (bool, error) {
	switch {
	case c == nil:
		return false, errors.New("branch without a condition")
	case c.Replied != nil:
		return r.tx.RepliedSince(ctx, run.BrandID, u.ID, run.EnteredAt.Time)
	case c.Event != nil:
		return r.tx.EventSince(ctx, u.ID, *c.Event, run.EnteredAt.Time)
	case c.Criteria != nil:
		ok, err := r.tx.UserMatches(ctx, run.BrandID, u.ID, *c.Criteria)
		if parley.ErrorCode(err) == parley.EValidation {
			// A segment the criteria name changed past D14's limits
			// since the flow was saved: the condition cannot hold.
			r.s.logger.Warn("flows: a branch's criteria cannot be evaluated", "flow_id", run.FlowID, "err", err)
			return false, nil
		}
		return ok, err
	}
	return false, errors.New("branch without a condition")
}

// userZone is where a contact's local times are measured (D17): the
// ZIP's zone, else the number's, else the brand's.
func userZone(u *parley.User, set *parley.BrandSettings) *time.Location {
	zip := ""
	if u.Location != nil && u.Location.TimeZone != nil {
		zip = *u.Location.TimeZone
	}
	return sendwindow.Zones(zip, u.PhoneNumber, set.TimeZone)[0]
}

// nextClock is the first time at or after now that is hh:mm in loc.
func nextClock(now time.Time, loc *time.Location, hhmm string) time.Time {
	h, _ := strconv.Atoi(hhmm[:2])
	m, _ := strconv.Atoi(hhmm[3:])
	local := now.In(loc)
	t := time.Date(local.Year(), local.Month(), local.Day(), h, m, 0, 0, loc)
	if t.Before(now) {
		t = time.Date(local.Year(), local.Month(), local.Day()+1, h, m, 0, 0, loc)
	}
	return t
}

// render fills the step's body in for the contact and, in an
// event-triggered run, the event's properties (D21), as a campaign's
// are.
func (r *flowRunner) render(run *store.DueRun, body string, u *parley.User) string {
	k := [3]int64{run.FlowID, run.Version, int64(run.Step)}
	b, ok := r.bodies[k]
	if !ok {
		b = newBodyRenderer(body)
		r.bodies[k] = b
	}
	return b.render(body, Contact{FirstName: deref(u.FirstName), LastName: deref(u.LastName),
		CustomData: string(u.CustomData), Event: run.Event})
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
