// Package sim is the default SMS provider: a local simulator that needs no
// network. It accepts a message (Parley marks it sent), then reports it
// delivered after Delay, and honours the magic numbers of D12:
//
//	+15005550001  refused: failed, error_code invalid_number
//	+15005550002  accepted, then undelivered, error_code carrier_unreachable
//
// Its carrier state is kept in the database, so a send survives a crash of
// the process and is accepted only once per message (the message id is its
// idempotency key).
package sim

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/delivery"
	"github.com/parleyhq/parley/internal/store"
)

// Magic recipient numbers (D12).
const (
	InvalidNumber     = "+15005550001"
	UnreachableNumber = "+15005550002"
)

// Ledger is where the simulator keeps its carrier state.
type Ledger interface {
	SimAccept(ctx context.Context, rec store.SimRecord) (store.SimRecord, bool, error)
	SimAcceptMany(ctx context.Context, recs []store.SimRecord) ([]store.SimRecord, int, error)
	SimDue(ctx context.Context, now time.Time, after store.SimCursor, limit int) ([]store.SimRecord, error)
	SimMarkReported(ctx context.Context, messageIDs []int64) error
}

// Provider is the simulator.
type Provider struct {
	ledger Ledger
	// Delay is how long after acceptance the final status is reported;
	// default 500 ms.
	Delay time.Duration
	// Tick is how often due statuses are reported while this process
	// sends or has statuses to report; default 50 ms.
	Tick time.Duration
	// IdleTick is how often they are looked for otherwise, for the
	// messages another process sent: an idle node then costs next to no
	// CPU (issue #35); default 1 s.
	IdleTick time.Duration
	// Reporters is how many reports are applied at once; default 64.
	// Carriers report concurrently too, and on PostgreSQL each report waits
	// for its commit to reach the disk: one at a time, the reports held
	// deliveries to about 400 a second; reports in flight together share
	// commits (measured on PostgreSQL: 16 → 909, 64 → 968 messages/s).
	Reporters int
	// ReportBatch is how many due records one read takes; default 500.
	ReportBatch int
	// Retry is how long a record whose report the sink could not take
	// waits before it is tried again; default 250 ms. Real time, not Now's:
	// a report waits for the sender's write, which a stopped test clock
	// does not hold back.
	Retry time.Duration
	// Now is the clock; tests replace it.
	Now    func() time.Time
	Logger *slog.Logger

	sends atomic.Int64
	// lastSend is when (real time, UnixNano) this process last handed the
	// carrier a message: its status is due Delay later.
	lastSend atomic.Int64

	mu sync.Mutex
	// putBack holds the records whose report the sink could not take, by
	// message id, with when (real time) each is tried again.
	putBack map[int64]time.Time
}

// New returns a simulator keeping its state in ledger.
func New(ledger Ledger) *Provider {
	return &Provider{ledger: ledger, Delay: 500 * time.Millisecond, Tick: 50 * time.Millisecond, IdleTick: time.Second, Reporters: 64,
		ReportBatch: 500, Retry: 250 * time.Millisecond, Now: time.Now, Logger: slog.New(slog.DiscardHandler)}
}

var _ delivery.Provider = (*Provider)(nil)

// Name implements delivery.Provider.
func (p *Provider) Name() string { return "sim" }

// Sends counts the messages this process handed to the simulated carrier
// (repeated sends of one message count once).
func (p *Provider) Sends() int64 { return p.sends.Load() }

// Send implements delivery.Provider.
func (p *Provider) Send(ctx context.Context, m delivery.Message) (delivery.Receipt, error) {
	if m.To == InvalidNumber {
		return delivery.Receipt{}, &delivery.Error{Code: "invalid_number", Message: "The number " + m.To + " is not a valid mobile number."}
	}
	rec := store.SimRecord{ProviderID: newSID(), MessageID: m.ID, FinalStatus: parley.StatusDelivered, DueAt: p.Now().Add(p.Delay)}
	if m.To == UnreachableNumber {
		rec.FinalStatus, rec.ErrorCode, rec.ErrorMessage = parley.StatusUndelivered, "carrier_unreachable", "The carrier could not reach the handset."
	}
	stored, fresh, err := p.ledger.SimAccept(ctx, rec)
	if err != nil {
		return delivery.Receipt{}, err
	}
	p.lastSend.Store(time.Now().UnixNano())
	if fresh {
		p.sends.Add(1)
		p.Logger.Info("sim: message sent to handset", "message_id", m.ID, "provider_id", stored.ProviderID, "to_suffix", suffix(m.To))
	}
	return delivery.Receipt{ProviderID: stored.ProviderID}, nil
}

var _ delivery.BatchSender = (*Provider)(nil)

// SendBatch implements delivery.BatchSender: one insert into the ledger
// for the whole batch. A message it holds already keeps its record and is
// not counted again in Sends.
func (p *Provider) SendBatch(ctx context.Context, ms []delivery.Message) []delivery.Result {
	out, fresh, err := p.sendBatch(ms, func(recs []store.SimRecord) ([]store.SimRecord, int, error) {
		return p.ledger.SimAcceptMany(ctx, recs)
	})
	if err == nil {
		p.sent(len(ms), fresh)
	}
	return out
}

// sent counts and logs a batch the carrier took, fresh of its messages new.
func (p *Provider) sent(messages, fresh int) {
	p.lastSend.Store(time.Now().UnixNano())
	p.sends.Add(int64(fresh))
	p.Logger.Info("sim: batch sent to handsets", "messages", messages, "new", fresh)
}

// SendBatchTx is SendBatch with the batch accepted in tx, the transaction
// that hands it over (issue #31 item 12): the simulated carrier takes the
// messages exactly when the hand-over commits, so a STOP is answered
// either before both (and stops its message) or after both. An error is
// the ledger's, and tx must not commit; the results then hold nothing.
func (p *Provider) SendBatchTx(ctx context.Context, tx *store.Tx, ms []delivery.Message) ([]delivery.Result, error) {
	out, fresh, err := p.sendBatch(ms, func(recs []store.SimRecord) ([]store.SimRecord, int, error) {
		return tx.SimAcceptMany(ctx, recs)
	})
	if err != nil {
		return nil, err
	}
	// Counted and logged once tx commits: a node killed before that sent
	// nothing, and the kill tests count the log's sends.
	tx.AfterCommit(func() { p.sent(len(ms), fresh) })
	return out, nil
}

// sendBatch builds the ledger records of ms, has accept store them and
// returns each message's result and how many were new; a ledger error is
// every accepted message's result, and returned.
func (p *Provider) sendBatch(ms []delivery.Message, accept func([]store.SimRecord) ([]store.SimRecord, int, error)) ([]delivery.Result, int, error) {
	out := make([]delivery.Result, len(ms))
	recs := make([]store.SimRecord, 0, len(ms))
	idx := make([]int, 0, len(ms))
	due := p.Now().Add(p.Delay)
	for i, m := range ms {
		if m.To == InvalidNumber {
			out[i].Err = &delivery.Error{Code: "invalid_number", Message: "The number " + m.To + " is not a valid mobile number."}
			continue
		}
		rec := store.SimRecord{ProviderID: orderedSID(m.ID), MessageID: m.ID, FinalStatus: parley.StatusDelivered, DueAt: due}
		if m.To == UnreachableNumber {
			rec.FinalStatus, rec.ErrorCode, rec.ErrorMessage = parley.StatusUndelivered, "carrier_unreachable", "The carrier could not reach the handset."
		}
		recs = append(recs, rec)
		idx = append(idx, i)
	}
	stored, fresh, err := accept(recs)
	if err != nil {
		for _, i := range idx {
			out[i].Err = err
		}
		return out, 0, err
	}
	for j, i := range idx {
		out[i].Receipt = delivery.Receipt{ProviderID: stored[j].ProviderID}
	}
	return out, fresh, nil
}

// Run reports due final statuses to sink until ctx ends: every Tick while
// this process has sent within Delay and a few ticks, or has statuses
// put back or just reported; every IdleTick otherwise.
func (p *Provider) Run(ctx context.Context, sink delivery.Sink) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n, err := p.flush(ctx, sink)
		if err != nil && ctx.Err() == nil {
			p.Logger.Warn("sim: reporting statuses", "error", err)
		}
		t.Reset(p.nextTick(n))
	}
}

// nextTick is how long Run waits after a flush that reported n statuses.
func (p *Provider) nextTick(n int) time.Duration {
	tick := cmp.Or(p.Tick, 50*time.Millisecond)
	idle := max(cmp.Or(p.IdleTick, time.Second), tick)
	p.mu.Lock()
	pending := len(p.putBack) > 0
	p.mu.Unlock()
	recent := time.Since(time.Unix(0, p.lastSend.Load())) < p.Delay+4*tick
	if n > 0 || pending || recent {
		return tick
	}
	return idle
}

// Flush reports every final status that is due now. A record whose
// report the sink cannot take now — its send is not recorded yet
// (delivery.ErrNotYet: a report that overtook the sender's write, or a
// sender that died between the provider call and that write, whose claim
// waits to go stale), or its report failed — is put back for Retry, and
// the reading goes on past it (in the order of due_at, then message id):
// the reports of every other message keep flowing (issue #31 item 13;
// before, the first 500 such records were read again on every tick and
// nothing after them was reported, for up to 108 s).
func (p *Provider) Flush(ctx context.Context, sink delivery.Sink) error {
	_, err := p.flush(ctx, sink)
	return err
}

// flush is Flush, and returns how many records were due.
func (p *Provider) flush(ctx context.Context, sink delivery.Sink) (int, error) {
	batch := cmp.Or(p.ReportBatch, 500)
	var failed error
	var after store.SimCursor
	n := 0
	for {
		due, err := p.ledger.SimDue(ctx, p.Now(), after, batch)
		if err != nil {
			return n, err
		}
		if len(due) == 0 {
			return n, failed
		}
		n += len(due)
		last := due[len(due)-1]
		after = store.SimCursor{DueAt: last.DueAt, MessageID: last.MessageID}
		reported, later, err := p.report(ctx, sink, p.ready(due))
		failed = cmp.Or(failed, err)
		// Marked once per batch: after a crash in between, the repeated
		// reports change nothing.
		if err := p.ledger.SimMarkReported(ctx, reported); err != nil {
			return n, err
		}
		p.settle(reported, later)
		if ctx.Err() != nil {
			return n, ctx.Err()
		}
		if len(due) < batch {
			return n, failed
		}
	}
}

// ready returns the records of due that are not put back, or whose
// Retry has passed.
func (p *Provider) ready(due []store.SimRecord) []store.SimRecord {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.putBack) == 0 {
		return due
	}
	now := time.Now()
	out := due[:0:0]
	for _, r := range due {
		if until, ok := p.putBack[r.MessageID]; !ok || !now.Before(until) {
			out = append(out, r)
		}
	}
	return out
}

// settle forgets the records reported and puts back those to try again.
func (p *Provider) settle(reported, later []int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, id := range reported {
		delete(p.putBack, id)
	}
	if len(later) == 0 {
		return
	}
	if p.putBack == nil {
		p.putBack = map[int64]time.Time{}
	}
	now := time.Now()
	for id, until := range p.putBack {
		if now.Sub(until) > time.Minute {
			delete(p.putBack, id) // reported elsewhere (another node), or read again if not
		}
	}
	for _, id := range later {
		p.putBack[id] = now.Add(p.retry())
	}
	p.Logger.Info("sim: reports put back", "records", len(later), "retry", p.retry())
}

func (p *Provider) retry() time.Duration { return cmp.Or(p.Retry, 250*time.Millisecond) }

// report applies the reports of due and returns the message ids of
// those applied and of those to try again later, and the first error of
// a report: in one call when the sink takes batches (one transaction for
// the whole batch), else Reporters at a time. A batch the sink refuses
// whole is reported one at a time, so that one bad record cannot hold up
// the others.
func (p *Provider) report(ctx context.Context, sink delivery.Sink, due []store.SimRecord) (reported, later []int64, failed error) {
	if len(due) == 0 {
		return nil, nil, nil
	}
	// One time for the batch: the sink groups reports by it, and moves
	// each group with one statement.
	now := p.Now()
	update := func(r store.SimRecord) delivery.StatusUpdate {
		return delivery.StatusUpdate{ProviderID: r.ProviderID, MessageID: r.MessageID, Status: r.FinalStatus,
			ErrorCode: r.ErrorCode, ErrorMessage: r.ErrorMessage, At: now}
	}
	if bs, ok := sink.(delivery.BatchSink); ok {
		us := make([]delivery.StatusUpdate, len(due))
		for i, r := range due {
			us[i] = update(r)
		}
		errs, err := bs.ApplyStatuses(ctx, us)
		if err == nil {
			for i, r := range due {
				if errs[i] == nil {
					reported = append(reported, r.MessageID)
				} else {
					later = append(later, r.MessageID)
				}
			}
			return reported, later, nil
		}
		if ctx.Err() != nil {
			return nil, nil, err
		}
		p.Logger.Warn("sim: a batch of reports failed; reporting them one at a time", "records", len(due), "error", err)
		failed = err
	}
	var (
		mu    sync.Mutex
		wg    sync.WaitGroup
		slots = make(chan struct{}, max(1, p.Reporters))
	)
	for _, r := range due {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			err := sink.ApplyStatus(ctx, update(r))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				reported = append(reported, r.MessageID)
			case ctx.Err() != nil: // shutting down: the next start reports it
			case errors.Is(err, delivery.ErrNotYet):
				later = append(later, r.MessageID)
			default:
				failed = cmp.Or(failed, err)
				later = append(later, r.MessageID)
			}
		})
	}
	wg.Wait()
	return reported, later, failed
}

func newSID() string {
	var b [16]byte
	rand.Read(b[:])
	return "SIM" + hex.EncodeToString(b[:])
}

// orderedSID is a batch's provider id: it sorts by message id, so a
// campaign's ids land at the end of the index on them
// (messages_provider_id) instead of at random pages — measured on
// SQLite, random ids made writing a batch's sends 4× slower than its
// delivery reports once the indexes outgrew the page cache.
func orderedSID(messageID int64) string {
	var b [4]byte
	rand.Read(b[:])
	return fmt.Sprintf("SIM%016x%s", messageID, hex.EncodeToString(b[:]))
}

// suffix keeps the last digits of a number for logs, not the whole number.
func suffix(phone string) string {
	if len(phone) <= 4 {
		return phone
	}
	return phone[len(phone)-4:]
}

// Idempotent reports that the simulator accepts a message at most once per
// message id, so an interrupted send may be repeated safely.
func (p *Provider) Idempotent() bool { return true }
