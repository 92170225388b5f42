package service

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/delivery"
	"github.com/parleyhq/parley/internal/jobs"
	"github.com/parleyhq/parley/internal/sendwindow"
	"github.com/parleyhq/parley/internal/store"
)

// Sending campaigns (D16, D17). A scheduler resolves each campaign once
// when its send_at comes; the resolution queues one send job per campaign
// (jobs.QueueCampaigns), which sends the campaign's messages a batch at a
// time: claim (sending_at, in one statement), the sending window and
// consent per recipient, the hand-over (consent read again and the
// frequency cap decided, in one statement just before the call: issue
// #31), one provider call for the batch, one transaction for the batch's
// outcomes. Exactly once rests on the claim: a claimed
// message is taken by no other batch; a claim whose outcome was never
// written (the process died) is claimed again once stale, and sent again
// only to an idempotent provider, else failed send_outcome_unknown, as a
// single message is.

// Defaults of the campaign sender.
const (
	// DefaultCampaignBatch is how many messages a batch takes without a
	// send rate: large enough that the per-transaction costs (on
	// PostgreSQL, the activity trigger's lock and a commit) are shared by
	// many messages, small enough that a batch's transaction holds the
	// writer for milliseconds, which a single message then waits for.
	DefaultCampaignBatch = 500
	// sqliteCampaignBatch is DefaultCampaignBatch on SQLite, whose one
	// writer every API write waits for while a batch holds it: half the
	// batch halves that wait, and costs the drain little (measured at
	// 100,000 messages, load 7.5: POST /messages p99 105 – 168 ms instead
	// of 239 – 317, delivered 10.6 – 12.3 s instead of 11.0 – 11.3).
	sqliteCampaignBatch = 250
	// DefaultStaleClaim is how old a claim must be before it is taken for
	// one whose sender died (see SetCampaigns).
	DefaultStaleClaim = time.Minute
	// maxCampaignAttempts bounds the provider calls for one message that
	// fail temporarily, as DeliverMessageArgs does for single messages.
	maxCampaignAttempts = 10
	// analyzeAfter is how many messages a resolution writes before the
	// planner's statistics of messages are refreshed (store.AnalyzeMessages).
	analyzeAfter = 10000
	// claimPoll is how often a sender looks again at claims in flight.
	claimPoll = 100 * time.Millisecond
	// resolvePoll is how often a sender with nothing queued looks again
	// while the campaign's audience is still being written.
	resolvePoll = 20 * time.Millisecond
	// batchSendConcurrency bounds the calls in flight for a provider that
	// takes one message per call (Twilio).
	batchSendConcurrency = 16
)

// CampaignMetrics observes the campaign sender (metrics.Metrics has it).
type CampaignMetrics interface {
	CampaignBatch(sent int)
}

// SetCampaigns tunes the campaign sender: the most messages a batch
// takes (0: DefaultCampaignBatch, sqliteCampaignBatch on SQLite) and how old a claim must be to be taken
// for one whose sender died (0: DefaultStaleClaim). The stale age must
// exceed a live batch's claim-to-outcome time by far: the job queue's
// rescue delay is the natural value.
func (s *Service) SetCampaigns(batch int, staleClaim time.Duration) {
	s.campaignBatch, s.staleClaim = batch, staleClaim
}

// SetResolveChunk sets how many users one transaction of a campaign's
// resolution reads (0: store.DefaultResolveChunk); tests set it small to
// cross chunk boundaries.
func (s *Service) SetResolveChunk(n int) { s.resolveChunk = n }

// RunCampaignScheduler resolves due campaigns until ctx ends. Every
// worker node runs it: the resolution's guarded UPDATE lets one node
// resolve each campaign. It looks every interval while it finds
// campaigns to resolve; otherwise it sleeps until the earliest scheduled
// send_at, at most campaignIdle(every), or until this process schedules a
// campaign (wakeCampaigns): an idle node costs next to nothing (issue
// #35), and a campaign another process schedules for now starts within
// campaignIdle(every).
func (s *Service) RunCampaignScheduler(ctx context.Context, every time.Duration) {
	var watched time.Time
	for {
		n, err := s.ResolveDueCampaigns(ctx)
		if err != nil && ctx.Err() == nil {
			s.logger.Warn("campaigns: resolving due campaigns", "error", err)
		}
		if time.Since(watched) >= campaignWatchEvery {
			watched = time.Now()
			if _, err := s.RestartStalledCampaigns(ctx); err != nil && ctx.Err() == nil {
				s.logger.Warn("campaigns: restarting stalled campaigns", "error", err)
			}
		}
		wait := campaignIdle(every)
		if n > 0 || err != nil {
			wait = every
		} else if at, ok, err := s.db.NextCampaignAt(ctx); err == nil && ok {
			wait = min(wait, max(at.Sub(s.db.Now()), every))
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-s.campaignWake:
		case <-t.C:
		}
		t.Stop()
	}
}

// campaignIdle is the longest the scheduler sleeps: five intervals, at
// most a second (tests' short intervals keep short sleeps).
func campaignIdle(every time.Duration) time.Duration {
	return max(every, min(5*every, time.Second))
}

// wakeCampaigns tells this node's scheduler that a campaign may be due.
func (s *Service) wakeCampaigns() {
	select {
	case s.campaignWake <- struct{}{}:
	default:
	}
}

// ResolveDueCampaigns resolves the campaigns whose send_at has come by
// the store's clock (D16), and resumes the resolutions a crash cut short,
// and returns how many it started. A campaign's start (its counts, status
// sending), the first chunk of its audience, its campaign.started event
// and its send job commit in one transaction; the rest of the audience is
// written a chunk at a time, each chunk its own transaction
// (resolveChunks); the send job waits until it is whole. A campaign
// another node started first is skipped; one that fails is logged and
// does not hold up the others (the first error is returned).
func (s *Service) ResolveDueCampaigns(ctx context.Context) (int, error) {
	due, err := s.db.DueCampaigns(ctx, s.db.Now(), 16)
	if err != nil {
		return 0, err
	}
	n := 0
	var failed error
	for _, c := range due {
		s.logger.Info("campaign: resolving", "brand_id", c.BrandID, "campaign_id", c.ID)
		a := store.Audience{SegmentID: c.SegmentID}
		var done bool
		err := guard(func() error {
			// A segment that cannot be evaluated (D14: over the limit of
			// expanded criteria, a field deleted, …) is found out before
			// anything is written.
			if _, err := usableSegment(ctx, s.db, c.BrandID, c.SegmentID); err != nil {
				return err
			}
			return s.db.WithTx(ctx, func(tx *store.Tx) error {
				// Read again under the row's lock: an edit (UpdateCampaign)
				// may have changed it since DueCampaigns read it.
				fresh, err := startable(ctx, tx, c, tx.Now())
				if err != nil {
					return err
				}
				*c = *fresh
				a = store.Audience{SegmentID: c.SegmentID}
				if err := tx.StartCampaign(ctx, c, a); err != nil {
					return err
				}
				// campaign.started says what the resolution will write.
				c.Stats.Queued = c.Stats.Recipients - c.Stats.SkippedUnsubscribed - c.Stats.SkippedFrequencyCap
				if _, done, err = tx.ResolveCampaignChunk(ctx, c, a, s.resolveChunk); err != nil {
					return err
				}
				s.jobsOf(tx).Campaign(c.BrandID, c.ID)
				return s.emit(ctx, tx, c.BrandID, parley.EventCampaignStarted, c)
			})
		})
		switch {
		case errors.Is(err, store.ErrCampaignNotScheduled): // another node, or canceled
		case unresolvable(err):
			s.endUnresolvable(ctx, c, err)
		case err != nil:
			// One campaign that cannot be resolved now must not hold up
			// the others due in the same tick.
			s.logger.Warn("campaigns: resolving a campaign", "brand_id", c.BrandID, "campaign_id", c.ID, "error", err)
			failed = cmp.Or(failed, err)
		default:
			n++
			s.logger.Info("campaign started", "brand_id", c.BrandID, "campaign_id", c.ID, "messages", c.Stats.Queued,
				"recipients", c.Stats.Recipients)
			if done {
				s.resolved(ctx, c)
			} else if err := guard(func() error { return s.resolveChunks(ctx, c) }); unresolvable(err) {
				s.endUnresolvable(ctx, c, err)
			} else if err != nil {
				// The next tick resumes it (ResolvingCampaigns).
				s.logger.Warn("campaigns: resolving a campaign", "brand_id", c.BrandID, "campaign_id", c.ID, "error", err)
				failed = cmp.Or(failed, err)
			}
		}
	}
	// Resolutions left unfinished: a crash, or another node's in progress
	// (their chunks and ours then take turns, guarded by the cursor).
	resuming, err := s.db.ResolvingCampaigns(ctx, 16)
	if err != nil {
		return n, cmp.Or(failed, err)
	}
	for _, c := range resuming {
		if err := guard(func() error { return s.resolveChunks(ctx, c) }); unresolvable(err) {
			s.endUnresolvable(ctx, c, err)
		} else if err != nil {
			s.logger.Warn("campaigns: resuming a resolution", "brand_id", c.BrandID, "campaign_id", c.ID, "error", err)
			failed = cmp.Or(failed, err)
		}
	}
	return n, failed
}

// resolveChunks writes the rest of the started campaign c's audience, a
// chunk a transaction, until it is whole, the campaign is canceled or
// another node takes the next chunk first (ErrCampaignNotResolving). A
// transaction holds the database's writer (SQLite has one) only for one
// chunk: the API's writes go between them.
func (s *Service) resolveChunks(ctx context.Context, c *parley.Campaign) error {
	a := store.Audience{SegmentID: c.SegmentID}
	for {
		var done bool
		// Not a background write (store.WithBackgroundTx): the chunks are
		// few, each short, and D16's "written" time is theirs.
		err := s.db.WithTx(ctx, func(tx *store.Tx) error {
			var err error
			_, done, err = tx.ResolveCampaignChunk(ctx, c, a, s.resolveChunk)
			return err
		})
		switch {
		case errors.Is(err, store.ErrCampaignNotResolving):
			return nil
		case err != nil:
			return err // unresolvable ones are canceled by the caller
		case done:
			s.resolved(ctx, c)
			return nil
		}
	}
}

// errResolvePanic is a resolution that panicked: whatever stored row
// caused it would cause it again at every tick, on every node.
type errResolvePanic struct{ v any }

func (e errResolvePanic) Error() string { return fmt.Sprint("campaigns: resolution panicked: ", e.v) }

// guard runs fn and turns its panic into errResolvePanic, so that no
// stored campaign can take a node down, again at each restart.
func guard(fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = errResolvePanic{p}
		}
	}()
	return fn()
}

// unresolvable reports whether err means the campaign's segment cannot be
// resolved as stored, so that trying again would fail the same way
// forever: the segment is refused by D14's rules (its limit of expanded
// criteria included) or is gone, or the resolution panicked.
func unresolvable(err error) bool {
	var p errResolvePanic
	code := parley.ErrorCode(err)
	return code == parley.EValidation || code == parley.ESegmentNotFound || errors.Is(err, store.ErrNotFound) ||
		errors.As(err, &p)
}

// endUnresolvable cancels campaign c, whose segment cannot be resolved
// (unresolvable), with the reason as its cancel_reason: a canceled
// campaign is never tried again, and the brand can read why.
func (s *Service) endUnresolvable(ctx context.Context, c *parley.Campaign, err error) {
	why := parley.ErrorMessage(err)
	switch {
	case errors.Is(err, store.ErrNotFound):
		why = "segment " + strconv.FormatInt(c.SegmentID, 10) + " not found"
	case parley.ErrorCode(err) == parley.EInternal:
		why = "an internal error (see the server's log)"
	}
	why = "The campaign's segment could not be resolved at send_at: " + why
	s.logger.Error("campaigns: canceled: its segment cannot be resolved", "brand_id", c.BrandID, "campaign_id", c.ID,
		"segment_id", c.SegmentID, "error", err.Error())
	if _, cerr := s.cancelCampaign(ctx, parley.Origin{}, c.BrandID, c.ID, why); cerr != nil && ctx.Err() == nil {
		s.logger.Warn("campaigns: canceling an unresolvable campaign", "brand_id", c.BrandID, "campaign_id", c.ID, "error", cerr)
	}
}

// resolved follows the last chunk of c's audience: after a large one the
// planner's statistics of messages are refreshed (store.AnalyzeMessages)
// before the send job's batches are planned on them.
func (s *Service) resolved(ctx context.Context, c *parley.Campaign) {
	s.logger.Info("campaign resolved", "brand_id", c.BrandID, "campaign_id", c.ID)
	if c.Stats.Recipients-c.Stats.SkippedUnsubscribed-c.Stats.SkippedFrequencyCap >= analyzeAfter {
		if err := s.db.AnalyzeMessages(ctx); err != nil {
			s.logger.Warn("campaigns: analyze after a large resolution", "error", err)
		}
	}
}

func (s *Service) campaignBatchSize() int {
	if s.campaignBatch > 0 {
		return s.campaignBatch
	}
	if s.db.Engine() == "sqlite" {
		return sqliteCampaignBatch
	}
	return DefaultCampaignBatch
}

func (s *Service) staleClaimAge() time.Duration {
	if s.staleClaim > 0 {
		return s.staleClaim
	}
	return DefaultStaleClaim
}

// brandSending reads what a batch of the brand's needs: its settings,
// its sending window and the brand (its number).
func (s *Service) brandSending(ctx context.Context, brandID int64) (*parley.BrandSettings, sendwindow.Window, *parley.Brand, error) {
	set, err := s.db.BrandSettings(ctx, brandID)
	if err != nil {
		return nil, sendwindow.Window{}, nil, err
	}
	window, err := sendwindow.ParseWindow(set.SendingWindow.Start, set.SendingWindow.End)
	if err != nil {
		return nil, sendwindow.Window{}, nil, err // settings are checked when saved
	}
	brand, err := s.db.FindBrand(ctx, brandID)
	return set, window, brand, err
}

// claimedBatch is what claimBatch took: the recipients of the messages
// claimed (isStale: taken again from a dead sender), the pacing
// reservation made for them, or how long to wait when none may go now.
type claimedBatch struct {
	now        time.Time
	recipients []store.CampaignRecipient
	isStale    map[int64]bool
	pace       *reservation
	wait       time.Duration
}

// claimBatch claims a batch of a source of queued messages (a campaign, a
// flow) in tx with its claim and claimStale: the commit relaxed for an
// idempotent provider, the batch reserved under the brand's send_rate.
// Stale claims (a dead sender's) are looked for only once nothing else
// can go: the search reads every queued message of the source, which
// each batch cannot afford; they go last.
func (s *Service) claimBatch(ctx context.Context, tx *store.Tx, brandID int64, set *parley.BrandSettings, idempotent bool,
	claim func(limit int, provider string) ([]store.CampaignRecipient, error),
	claimStale func(before time.Time, limit int) ([]store.CampaignRecipient, error)) (claimedBatch, error) {
	cl := claimedBatch{now: tx.Now()}
	if idempotent {
		if err := tx.RelaxCommit(ctx); err != nil {
			return cl, err
		}
	}
	limit, pace, wait, err := s.reserveBatch(ctx, tx, brandID, set, cl.now)
	if err != nil || wait > 0 {
		cl.wait = wait
		return cl, err
	}
	cl.pace = pace
	provider := ""
	if !idempotent {
		provider = s.provider.Name() // as MarkSending records it
	}
	fresh, err := claim(limit, provider)
	if err != nil {
		return cl, err
	}
	var stale []store.CampaignRecipient
	if len(fresh) == 0 {
		if stale, err = claimStale(cl.now.Add(-s.staleClaimAge()), limit); err != nil {
			return cl, err
		}
	}
	cl.recipients = append(stale, fresh...)
	cl.isStale = make(map[int64]bool, len(stale))
	for _, r := range stale {
		cl.isStale[r.MessageID] = true
	}
	return cl, nil
}

// reserveBatch returns how many messages a batch may take now and, for
// a brand with a send_rate, the reservation made for them (D16: the
// brand's rate holds across nodes), or how long to wait when none may go.
func (s *Service) reserveBatch(ctx context.Context, tx *store.Tx, brandID int64, set *parley.BrandSettings, now time.Time) (int, *reservation, time.Duration, error) {
	limit := s.campaignBatchSize()
	if set.SendRate <= 0 {
		return limit, nil, 0, nil
	}
	next, err := tx.LockPacing(ctx, brandID)
	if err != nil {
		return 0, nil, 0, err
	}
	r := reserve(now, next, set.SendRate, limit, false)
	if r.n == 0 {
		return 0, nil, max(r.wait, time.Microsecond), nil
	}
	return r.n, &r, 0, nil
}

// campaignFail is a message of a batch that fails, and why.
type campaignFail struct {
	id, userID  int64
	code, msg   string
	unsubscribe bool // the carrier reports an opt-out: consent becomes false
}

// SendCampaignBatch implements jobs.CampaignSender: it sends one batch of
// the brand's campaign, completes the campaign when nothing of it is
// queued any more, and says how long to wait when nothing can go now.
func (s *Service) SendCampaignBatch(ctx context.Context, brandID, campaignID int64) (jobs.CampaignProgress, error) {
	c, err := s.db.FindCampaign(ctx, brandID, campaignID)
	if errors.Is(err, store.ErrNotFound) {
		return jobs.CampaignProgress{Done: true}, nil
	}
	if err != nil {
		return jobs.CampaignProgress{}, err
	}
	// The drain starts once the audience is written whole: on a machine
	// short of CPU (and on SQLite, of its one writer) batches between the
	// resolution's chunks only put off its end (measured, 100,000 members:
	// written 1.8 – 3.0 s instead of 1.3 s), and the messages go no sooner.
	if c.Status == parley.CampaignSending {
		if resolving, err := s.db.CampaignResolving(ctx, brandID, campaignID); err != nil {
			return jobs.CampaignProgress{}, err
		} else if resolving {
			return jobs.CampaignProgress{Wait: resolvePoll}, nil
		}
	}
	set, window, brand, err := s.brandSending(ctx, brandID)
	if err != nil {
		return jobs.CampaignProgress{}, err
	}
	// The campaign's media are every message's: looked up once a batch.
	var mediaURLs []string
	mediaGone := ""
	for _, id := range c.MediaItemUUIDs {
		f, err := s.FindFileByID(ctx, brandID, id)
		if parley.ErrorCode(err) == parley.ENotFound {
			mediaGone = id
			break
		}
		if err != nil {
			return jobs.CampaignProgress{}, err
		}
		mediaURLs = append(mediaURLs, s.publicURL+s.MediaURLPath(f, s.db.Now().Add(24*time.Hour)))
	}
	idempotent := isIdempotent(s.provider)
	render := newBodyRenderer(c.Body)
	bodies := map[int64]string{} // rendered, by message id (D21)

	var (
		batch []store.CampaignRecipient
		prog  jobs.CampaignProgress
	)
	// Read before the transaction, which then holds SQLite's writer for
	// less (store.Ahead).
	ahead, err := s.db.ReadCampaignAhead(ctx, brandID, c.ID, s.campaignBatchSize())
	if err != nil {
		return jobs.CampaignProgress{}, err
	}
	err = s.db.WithBackgroundTx(ctx, func(tx *store.Tx) error {
		batch, prog = nil, jobs.CampaignProgress{}
		cl, err := s.claimBatch(ctx, tx, brandID, set, idempotent,
			func(limit int, provider string) ([]store.CampaignRecipient, error) {
				return tx.ClaimCampaignMessages(ctx, brandID, c.ID, limit, provider, ahead)
			},
			func(before time.Time, limit int) ([]store.CampaignRecipient, error) {
				return tx.ClaimStaleCampaignMessages(ctx, brandID, c.ID, before, limit)
			})
		if err != nil || cl.wait > 0 {
			prog.Wait = cl.wait
			return err
		}
		if len(cl.recipients) == 0 {
			return s.campaignIdle(ctx, tx, c, &prog)
		}
		now, recipients, isStale, pace := cl.now, cl.recipients, cl.isStale, cl.pace
		sorted, err := s.sortClaimed(now, recipients, isStale, set, window, idempotent, func(store.CampaignRecipient) (string, string) {
			return c.Type, mediaGone
		})
		if err != nil {
			return err
		}
		batch = sorted.send
		fails, holds := sorted.fails, sorted.holds
		for until, ids := range holds {
			if err := tx.HoldCampaignMessages(ctx, brandID, ids, until); err != nil {
				return err
			}
		}
		// Each message keeps the body its recipient gets (D21), held ones
		// included, so GET /messages and num_segments show the rendered
		// text.
		clear(bodies)
		if !render.static() {
			users := make([]int64, len(recipients))
			for i, r := range recipients {
				users[i] = r.UserID
			}
			contacts, err := tx.RecipientContacts(ctx, brandID, users)
			if err != nil {
				return err
			}
			for _, r := range recipients {
				rc := contacts[r.UserID]
				bodies[r.MessageID] = render.render(c.Body, Contact{FirstName: rc.FirstName, LastName: rc.LastName, CustomData: rc.CustomData})
			}
			if err := tx.SetMessageBodies(ctx, brandID, bodies); err != nil {
				return err
			}
		}
		if err := s.failCampaignMessages(ctx, tx, brandID, fails); err != nil {
			return err
		}
		if pace != nil && len(batch) > 0 {
			return tx.SetPacing(ctx, brandID, pace.start.Add(span(len(batch), set.SendRate)))
		}
		return nil
	})
	if err != nil || len(batch) == 0 {
		return prog, err
	}

	msgs := make([]delivery.Message, len(batch))
	for i, r := range batch {
		body := c.Body
		if b, ok := bodies[r.MessageID]; ok {
			body = b
		}
		msgs[i] = delivery.Message{ID: r.MessageID, BrandID: brandID, From: brand.PhoneNumber, To: r.To, Body: body, MediaURLs: mediaURLs}
	}
	start := time.Now()
	results := s.sendBatch(ctx, brandID, s.handOver(set, c.Type, idempotent), set, msgs)
	s.observeCall("batch", time.Since(start))

	n, temp, err := s.writeOutcomes(ctx, brandID, batch, results, nil, idempotent, func(tx *store.Tx) (bool, error) {
		// A campaign canceled while the batch was with the provider is
		// claimed from no more: a message put back would stay queued for
		// ever, so it fails as the cancel would have failed it.
		// Only a batch with such messages locks the row.
		status, err := tx.LockCampaignStatus(ctx, brandID, c.ID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return false, err
		}
		return status != parley.CampaignSending, nil
	})
	if err != nil {
		return jobs.CampaignProgress{}, err
	}
	prog.Sent = n
	if temp > 0 {
		prog.Wait = time.Second // the provider is struggling: back off a little
	}
	return prog, nil
}

// outcomeTimeout bounds the write of a batch's outcomes, which outlives
// its job's deadline (writeOutcomes).
const outcomeTimeout = 30 * time.Second

// writeOutcomes writes the provider's results of a batch (results[i] is
// batch[i]'s) and the batch's fails, in one transaction: the sent moved
// to sent, the refused failed, the temporarily refused put back for a
// later batch until their attempts run out — or failed canceled when
// stopped (called only then) says their source sends no more. It returns
// how many were sent and how many met a temporary error.
func (s *Service) writeOutcomes(ctx context.Context, brandID int64, batch []store.CampaignRecipient, results []delivery.Result,
	fails []campaignFail, idempotent bool, stopped func(tx *store.Tx) (bool, error)) (int, int, error) {
	var (
		sent []store.Sent
		temp []int64
	)
	for i, res := range results {
		r := batch[i]
		var perr *delivery.Error
		switch {
		case res.Err == errNotHanded: // failed at its hand-over, or no longer queued
		case res.Err == nil:
			sent = append(sent, store.Sent{MessageID: r.MessageID, ProviderID: res.Receipt.ProviderID})
		case errors.As(res.Err, &perr) && perr.Unsubscribed:
			fails = append(fails, campaignFail{id: r.MessageID, userID: r.UserID, code: CodeUnsubscribed,
				msg: "The carrier reports that the recipient has opted out.", unsubscribe: true})
		case errors.As(res.Err, &perr) && !perr.Temporary:
			fails = append(fails, campaignFail{id: r.MessageID, userID: r.UserID, code: perr.Code, msg: perr.Message})
		default:
			temp = append(temp, r.MessageID)
		}
	}
	// The provider has the batch: its record must not be lost to the
	// job's deadline or a shutdown, or every message would stay queued,
	// its reports "not yet", until its claim went stale and it was sent
	// again — on a slow node, batch after batch (a CI run of
	// TestKillMidFlows sent nothing in 20 attempts). The write has its
	// own bound instead.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), outcomeTimeout)
	defer cancel()
	err := s.db.WithBackgroundTx(ctx, func(tx *store.Tx) error {
		if idempotent {
			if err := tx.RelaxCommit(ctx); err != nil {
				return err
			}
		}
		moved, err := tx.MarkSentMany(ctx, brandID, s.provider.Name(), sent)
		if err != nil {
			return err
		}
		tx.AfterCommit(func() {
			for range moved {
				s.observeTransition(parley.StatusSent)
			}
			if m, ok := s.metrics.(CampaignMetrics); ok {
				m.CampaignBatch(len(moved))
			}
		})
		if err := s.emitMany(ctx, tx, brandID, parley.EventMessageSent, moved); err != nil {
			return err
		}
		// A temporary refusal puts the message back for a later batch,
		// until its attempts run out.
		attempts, err := tx.MessageAttempts(ctx, brandID, temp)
		if err != nil {
			return err
		}
		stop := false
		if len(temp) > 0 && stopped != nil {
			if stop, err = stopped(tx); err != nil {
				return err
			}
		}
		var retry []int64
		fails := fails
		for _, id := range temp {
			if stop {
				fails = append(fails, campaignFail{id: id, code: parley.ErrorCodeCanceled, msg: canceledReason})
			} else if attempts[id] >= maxCampaignAttempts {
				fails = append(fails, campaignFail{id: id, code: "provider_unavailable", msg: "The provider did not take the message after repeated attempts."})
			} else {
				retry = append(retry, id)
			}
		}
		if err := tx.ReleaseCampaignMessages(ctx, brandID, retry); err != nil {
			return err
		}
		return s.failCampaignMessages(ctx, tx, brandID, fails)
	})
	if err != nil {
		return 0, 0, err
	}
	return len(sent), len(temp), nil
}

// claimedSort is what becomes of a batch's claimed messages: sent now,
// failed, or held until their window opens (by the opening).
type claimedSort struct {
	send  []store.CampaignRecipient
	fails []campaignFail
	holds map[time.Time][]int64
}

// sortClaimed decides, for each claimed message, what a batch does with
// it: a stale claim (isStale) goes again only to an idempotent provider;
// a deleted or opted-out recipient, or media gone, fails it; a MARKETING
// message outside the recipient's sending window is held (D17). of gives
// a message's type and the media item of it that is gone ("" if none).
func (s *Service) sortClaimed(now time.Time, recipients []store.CampaignRecipient, isStale map[int64]bool,
	set *parley.BrandSettings, window sendwindow.Window, idempotent bool,
	of func(store.CampaignRecipient) (typ, mediaGone string)) (claimedSort, error) {
	out := claimedSort{holds: map[time.Time][]int64{}}
	for _, r := range recipients {
		fail := func(code, msg string) {
			out.fails = append(out.fails, campaignFail{id: r.MessageID, userID: r.UserID, code: code, msg: msg})
		}
		if isStale[r.MessageID] {
			// Its batch may have reached the provider before the sender
			// died: only an idempotent provider may be asked again.
			if !idempotent {
				fail(CodeOutcomeUnknown, "A previous send attempt was interrupted; it may or may not have been sent.")
			} else {
				out.send = append(out.send, r)
			}
			continue
		}
		typ, mediaGone := of(r)
		switch {
		case r.Deleted:
			fail(CodeRecipientGone, "The recipient was deleted.")
		case r.Consent != nil && !*r.Consent:
			fail(CodeUnsubscribed, "The recipient has opted out of messages.")
		case mediaGone != "":
			fail(CodeMediaGone, "Media item "+mediaGone+" no longer exists.")
		case typ == parley.TypeMarketing:
			open, err := sendwindow.NextOpening(now, sendwindow.Zones(r.ZipZone, r.To, set.TimeZone),
				sendwindow.State(r.StateCode, r.To), window, s.usSendingRules)
			switch {
			case errors.Is(err, sendwindow.ErrNoOpening):
				fail(CodeOutsideWindow, "The sending window never opens in the recipient's local time.")
			case err != nil:
				return out, err
			case open.After(now):
				out.holds[open] = append(out.holds[open], r.MessageID)
			default:
				out.send = append(out.send, r)
			}
		default:
			out.send = append(out.send, r)
		}
	}
	return out, nil
}

// campaignIdle decides, when a batch found nothing to claim, whether the
// campaign is done (completing it when nothing is queued) or how long to
// wait: for messages held for their window, or for claims in flight to
// finish or go stale.
func (s *Service) campaignIdle(ctx context.Context, tx *store.Tx, c *parley.Campaign, prog *jobs.CampaignProgress) error {
	q, err := tx.CampaignQueueState(ctx, c.BrandID, c.ID)
	if err != nil {
		return err
	}
	now := tx.Now()
	sending := c.Status == parley.CampaignSending
	switch {
	case q.Queued == 0 && sending && q.Resolving:
		// Its resolver has not written the next chunk yet (or died: the
		// scheduler resumes it): look again in a moment.
		prog.Wait = resolvePoll
		return nil
	case q.Queued == 0:
		prog.Done = true
		if !sending {
			return nil
		}
		ok, err := tx.CompleteCampaign(ctx, c.BrandID, c.ID)
		if err != nil || !ok {
			return err
		}
		at := parley.NewTime(now)
		c.Status, c.CompletedAt = parley.CampaignCompleted, &at
		stats, err := s.db.CampaignStats(ctx, c.BrandID, c.ID) // every message's outcome has committed
		if err != nil {
			return err
		}
		c.Stats = *stats
		tx.AfterCommit(func() {
			s.logger.Info("campaign completed", "brand_id", c.BrandID, "campaign_id", c.ID, "sent", stats.Sent+stats.Delivered+stats.Undelivered)
		})
		return s.emit(ctx, tx, c.BrandID, parley.EventCampaignCompleted, c)
	case !sending && q.Claimed == 0:
		prog.Done = true // canceled: its unclaimed messages failed with the cancel
		return nil
	}
	prog.Wait = s.queueWait(q, now, sending)
	return nil
}

// queueWait is how long a sender that found nothing to claim waits: for
// claims in flight — another sender's batch, which will be written in a
// moment, or a dead sender's, stale at the latest then — and, when held
// counts, for the earliest message held for its window.
func (s *Service) queueWait(q store.CampaignQueue, now time.Time, held bool) time.Duration {
	wait := time.Duration(0)
	if q.Claimed > 0 {
		wait = min(q.OldestClaim.Add(s.staleClaimAge()).Sub(now), claimPoll)
	}
	if held && !q.NextHeld.IsZero() && (wait == 0 || q.NextHeld.Sub(now) < wait) {
		wait = q.NextHeld.Sub(now)
	}
	return max(wait, 10*time.Millisecond)
}

// failCampaignMessages fails messages of a batch, each with its event,
// and records the carrier's opt-outs on their users.
func (s *Service) failCampaignMessages(ctx context.Context, tx *store.Tx, brandID int64, fails []campaignFail) error {
	for _, f := range fails {
		code, msg := f.code, f.msg
		ok, err := s.transition(ctx, tx, brandID, f.id, store.Transition{Status: parley.StatusFailed, At: tx.Now(), ErrorCode: &code, ErrorMessage: &msg})
		if err != nil {
			return err
		}
		if ok && f.unsubscribe {
			if err := s.setConsent(ctx, tx, brandID, f.userID, false, parley.SourceCarrier, s.provider.Name()+":"+code, f.id); err != nil {
				return err
			}
		}
	}
	return nil
}

// emitMany emits typ for each of the brand's messages ids, reading them
// only when an endpoint takes typ.
func (s *Service) emitMany(ctx context.Context, tx *store.Tx, brandID int64, typ string, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	hooks, err := s.hooksFor(ctx, tx, brandID, typ)
	if err != nil || len(hooks) == 0 {
		return err
	}
	msgs, err := tx.FindMessages(ctx, brandID, ids)
	if err != nil {
		return err
	}
	for _, m := range msgs {
		if err := s.emitTo(ctx, tx, brandID, typ, hooks, m); err != nil {
			return err
		}
	}
	return nil
}

// errNotHanded is the result of a batch's message that its hand-over
// did not hand to the provider: it failed there (consent, cap, deleted
// recipient) or is no longer queued.
var errNotHanded = errors.New("service: not handed over")

// txBatchSender is a provider whose acceptance of a batch is a write to
// Parley's own database (the simulator): it accepts in the hand-over's
// transaction.
type txBatchSender interface {
	SendBatchTx(ctx context.Context, tx *store.Tx, ms []delivery.Message) ([]delivery.Result, error)
}

// sendBatch hands the brand's claimed msgs over and to the provider: in
// one call when it takes batches (inside the hand-over's transaction when
// it can), else batchSendConcurrency calls at a time, each message handed
// over just before its own call. The hand-over (store.HandOverMessages,
// with h) decides consent and the frequency cap and fails the messages it
// refuses in its transaction; their result is errNotHanded. A hand-over
// that fails gives its messages its error, which a batch treats as
// temporary: the claim is released for a later batch.
func (s *Service) sendBatch(ctx context.Context, brandID int64, h store.HandOver, set *parley.BrandSettings, msgs []delivery.Message) []delivery.Result {
	out := make([]delivery.Result, len(msgs))
	b, batches := s.provider.(delivery.BatchSender)
	if batches {
		ids := make([]int64, len(msgs))
		for i, m := range msgs {
			ids[i] = m.ID
		}
		var take []delivery.Message
		var at []int
		pick := func(handed map[int64]bool) {
			take, at = take[:0], at[:0]
			for i, m := range msgs {
				if handed[m.ID] {
					take, at = append(take, m), append(at, i)
				} else {
					out[i] = delivery.Result{Err: errNotHanded}
				}
			}
		}
		var within func(tx *store.Tx, handed map[int64]bool) error
		tb, inTx := s.provider.(txBatchSender)
		if inTx {
			within = func(tx *store.Tx, handed map[int64]bool) error {
				pick(handed)
				if len(take) == 0 {
					return nil
				}
				res, err := tb.SendBatchTx(ctx, tx, take)
				for j, r := range res {
					out[at[j]] = r
				}
				return err
			}
		}
		handed, err := s.handOverBatch(ctx, brandID, ids, h, set, within)
		if err != nil {
			for i := range out {
				out[i] = delivery.Result{Err: err}
			}
			return out
		}
		if inTx {
			return out
		}
		pick(handed)
		if len(take) == 0 {
			return out
		}
		for j, r := range b.SendBatch(ctx, take) {
			out[at[j]] = r
		}
		return out
	}
	var wg sync.WaitGroup
	slots := make(chan struct{}, batchSendConcurrency)
	for i, m := range msgs {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			handed, err := s.handOverBatch(ctx, brandID, []int64{m.ID}, h, set, nil)
			switch {
			case err != nil:
				out[i].Err = err
			case !handed[m.ID]:
				out[i].Err = errNotHanded
			default:
				out[i].Receipt, out[i].Err = s.provider.Send(ctx, m)
			}
		})
	}
	wg.Wait()
	return out
}

// handOverBatch hands the brand's claimed messages ids over in one
// transaction (store.HandOverMessages), failing those it refuses, runs
// within (when not nil) last in it, and returns the ones handed. It gives
// way to the API's writes before, not after: the provider call follows
// its commit at once, or is within.
func (s *Service) handOverBatch(ctx context.Context, brandID int64, ids []int64, h store.HandOver, set *parley.BrandSettings,
	within func(tx *store.Tx, handed map[int64]bool) error) (map[int64]bool, error) {
	if s.beforeHandOver != nil {
		s.beforeHandOver(brandID, ids)
	}
	var handed map[int64]bool
	err := s.db.WithBackgroundTx(ctx, func(tx *store.Tx) error {
		if h.Provider == "" && within == nil {
			// An idempotent provider: a hand-over lost in a crash leaves the
			// claim to go stale and be sent again, which it absorbs. One that
			// accepts within commits to the disk: its acceptance is the send.
			if err := tx.RelaxCommit(ctx); err != nil {
				return err
			}
		}
		// The claim recorded the attempt already.
		got, err := tx.HandOverMessages(ctx, brandID, ids, store.HandOver{Cap: h.Cap})
		if err != nil {
			return err
		}
		handed = make(map[int64]bool, len(got))
		for _, id := range got {
			handed[id] = true
		}
		if len(got) < len(ids) {
			var left []int64
			for _, id := range ids {
				if !handed[id] {
					left = append(left, id)
				}
			}
			fails, err := s.refusedFails(ctx, tx, brandID, left, set)
			if err != nil {
				return err
			}
			if err := s.failCampaignMessages(ctx, tx, brandID, fails); err != nil {
				return err
			}
		}
		if within != nil {
			return within(tx, handed)
		}
		return nil
	})
	return handed, err
}
