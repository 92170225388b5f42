package service

import (
	"context"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/delivery"
	"github.com/parleyhq/parley/internal/jobs"
	"github.com/parleyhq/parley/internal/store"
)

// Sending flows' messages (D21): at campaign speed, by the campaign
// sender's machinery. The runner writes a step's message queued and
// queues the flow's one sender job when none is queued or running
// (store.WantFlowSender); the job claims the flow's queued messages a
// batch at a time (messages_flow_queue), as a campaign's: consent and the
// sending window per recipient (a MARKETING message outside it is held
// and sent when it opens), pacing reserved per batch, consent and the
// frequency cap decided at the hand-over (so the flow's messages already
// handed count against the cap of the next), one provider call per batch
// and message type, one transaction for the outcomes, stale claims taken
// again. It runs in the campaigns' queue, so a POST /messages goes
// before it. Unlike a campaign's, a flow's messages each have their own
// type, rendered body and media.

// SendFlowBatch implements jobs.FlowSender: it sends one batch of the
// brand's flow's queued messages, and says how long to wait when nothing
// can go now, or that the job is done (nothing queued and no runner has
// written more since it looked).
func (s *Service) SendFlowBatch(ctx context.Context, brandID, flowID int64) (jobs.CampaignProgress, error) {
	set, window, brand, err := s.brandSending(ctx, brandID)
	if err != nil {
		return jobs.CampaignProgress{}, err
	}
	idempotent := isIdempotent(s.provider)

	var (
		batch []store.CampaignRecipient
		found map[int64]*parley.Message
		prog  jobs.CampaignProgress
	)
	ahead, err := s.db.ReadFlowAhead(ctx, brandID, flowID, s.campaignBatchSize())
	if err != nil {
		return jobs.CampaignProgress{}, err
	}
	err = s.db.WithBackgroundTx(ctx, func(tx *store.Tx) error {
		batch, found, prog = nil, map[int64]*parley.Message{}, jobs.CampaignProgress{}
		cl, err := s.claimBatch(ctx, tx, brandID, set, idempotent,
			func(limit int, provider string) ([]store.CampaignRecipient, error) {
				return tx.ClaimFlowMessages(ctx, brandID, flowID, limit, provider, ahead)
			},
			func(before time.Time, limit int) ([]store.CampaignRecipient, error) {
				return tx.ClaimStaleFlowMessages(ctx, brandID, flowID, before, limit)
			})
		if err != nil || cl.wait > 0 {
			prog.Wait = cl.wait
			return err
		}
		if len(cl.recipients) == 0 {
			return s.flowIdle(ctx, tx, brandID, flowID, &prog)
		}
		now, recipients, isStale, pace := cl.now, cl.recipients, cl.isStale, cl.pace
		ids := make([]int64, len(recipients))
		for i, r := range recipients {
			ids[i] = r.MessageID
		}
		msgs, err := tx.FindMessages(ctx, brandID, ids)
		if err != nil {
			return err
		}
		for _, m := range msgs {
			found[m.ID] = m
		}
		sorted, err := s.sortClaimed(now, recipients, isStale, set, window, idempotent, func(r store.CampaignRecipient) (string, string) {
			return found[r.MessageID].Type, ""
		})
		if err != nil {
			return err
		}
		// A contact's second MARKETING message waits for the next batch:
		// one hand-over statement counts what was handed before it, not
		// its own rows, against the frequency cap.
		seen := map[int64]bool{}
		for _, r := range sorted.send {
			if found[r.MessageID].Type == parley.TypeMarketing && !isStale[r.MessageID] {
				if seen[r.UserID] {
					sorted.holds[now] = append(sorted.holds[now], r.MessageID)
					continue
				}
				seen[r.UserID] = true
			}
			batch = append(batch, r)
		}
		for until, ids := range sorted.holds {
			if err := tx.HoldCampaignMessages(ctx, brandID, ids, until); err != nil {
				return err
			}
		}
		if err := s.failCampaignMessages(ctx, tx, brandID, sorted.fails); err != nil {
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

	// Media are looked up once a batch per item; a message whose item is
	// gone fails with the outcomes. The batch goes out a call per type:
	// the frequency cap is decided for the MARKETING ones only.
	var (
		fails  []campaignFail
		byType = map[string][]int{}
		urls   = map[string]string{}
		gone   = map[string]bool{}
	)
	msgs := make([]delivery.Message, len(batch))
	for i, r := range batch {
		m := found[r.MessageID]
		msgs[i] = delivery.Message{ID: r.MessageID, BrandID: brandID, From: brand.PhoneNumber, To: r.To, Body: m.Body}
		missing := ""
		for _, id := range m.MediaItemUUIDs {
			if _, ok := urls[id]; !ok && !gone[id] {
				f, err := s.FindFileByID(ctx, brandID, id)
				switch {
				case parley.ErrorCode(err) == parley.ENotFound:
					gone[id] = true
				case err != nil:
					return jobs.CampaignProgress{}, err
				default:
					urls[id] = s.publicURL + s.MediaURLPath(f, s.db.Now().Add(24*time.Hour))
				}
			}
			if gone[id] {
				missing = id
				break
			}
			msgs[i].MediaURLs = append(msgs[i].MediaURLs, urls[id])
		}
		if missing != "" {
			fails = append(fails, campaignFail{id: r.MessageID, userID: r.UserID, code: CodeMediaGone, msg: "Media item " + missing + " no longer exists."})
			continue
		}
		byType[m.Type] = append(byType[m.Type], i)
	}
	var (
		handed  []store.CampaignRecipient
		results []delivery.Result
	)
	start := time.Now()
	for typ, at := range byType {
		part := make([]delivery.Message, len(at))
		for j, i := range at {
			part[j] = msgs[i]
			handed = append(handed, batch[i])
		}
		results = append(results, s.sendBatch(ctx, brandID, s.handOver(set, typ, idempotent), set, part)...)
	}
	s.observeCall("batch", time.Since(start))
	n, temp, err := s.writeOutcomes(ctx, brandID, handed, results, fails, idempotent, nil)
	if err != nil {
		return jobs.CampaignProgress{}, err
	}
	prog.Sent = n
	if temp > 0 {
		prog.Wait = time.Second // the provider is struggling: back off a little
	}
	return prog, nil
}

// flowIdle decides, when a batch found nothing to claim, whether the
// flow's sender is done — nothing queued, and no runner wrote more since
// (store.EndFlowSender) — or how long to wait: for held messages, or for
// claims in flight to finish or go stale.
func (s *Service) flowIdle(ctx context.Context, tx *store.Tx, brandID, flowID int64, prog *jobs.CampaignProgress) error {
	gen, err := tx.FlowSenderGen(ctx, flowID)
	if err != nil {
		return err
	}
	q, err := tx.FlowQueueState(ctx, brandID, flowID)
	if err != nil {
		return err
	}
	if q.Queued == 0 {
		if gen < 0 {
			prog.Done = true // another sender of the flow ended it
			return nil
		}
		prog.Done, err = tx.EndFlowSender(ctx, flowID, gen)
		return err // not done: messages came meanwhile, claimed at once
	}
	prog.Wait = s.queueWait(q, tx.Now(), true)
	return nil
}
