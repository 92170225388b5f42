package service

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/extract"
	"github.com/parleyhq/parley/internal/store"
)

// ExtractionMetrics observes auto-collected custom data (D20).
type ExtractionMetrics interface {
	// Ran counts an extractor call, failed unless ok, and its latency.
	Ran(ok bool, took time.Duration)
	// Skipped counts an extraction that did not call the extractor.
	Skipped(reason string)
	Written(n int)
	Refused(reason string, n int)
}

// ConversationWindow bounds the messages an extraction reads: the
// contact's latest text and those before it, newest first. Enough for a
// question and its answers, and a bounded cost per extraction.
const ConversationWindow = 20

// SetExtraction sets the extractor that fills auto-collected custom data
// (D20) and where its metrics go (nil for none). With no extractor, the
// sweep does not run.
func (s *Service) SetExtraction(x extract.Extractor, m ExtractionMetrics) {
	s.extractor, s.extractMetrics = x, m
}

// Bounds of the extraction sweep (D20, #19).
const (
	// SweepBatch is how many inbound texts one sweep reads.
	SweepBatch = 200
	// sweepParallel bounds the extractor calls of a batch running at
	// once: a model server answers in seconds (the rules, in process, run
	// one at a time; see extractContacts).
	sweepParallel = 16
	// sweepPauseMax bounds a pause of the sweep (pace).
	sweepPauseMax = 10 * time.Millisecond
	// sweepExtractFor bounds one extraction, the openai extractor's own
	// timeouts and retries included, and the time a batch starts
	// extractions in: a slow model holds the sweep no longer than twice
	// this.
	sweepExtractFor = 45 * time.Second
	// sweepClaim is how long a sweeper's claim on a batch holds: past its
	// extractions and writes. A sweeper that died holding one delays the
	// texts after the cursor by at most this.
	sweepClaim = 2 * time.Minute
)

// sweepChunk is how many contacts' values one transaction of a batch
// writes: on SQLite every inbound text waits for the one writer while it
// commits, so a batch writes in small transactions; PostgreSQL's writes
// do not hold the inbound texts, and a batch writes in one.
func (s *Service) sweepChunk() int {
	if s.db.Engine() == "postgres" {
		return SweepBatch
	}
	return 16
}

// RunExtractionSweeper implements jobs.ExtractionSweeper: it sweeps the
// inbound texts every interval, and at once again after a full batch,
// until d has passed, stop is closed or ctx ends (D20, #19); a batch in
// flight is finished first. The extraction sweep job
// runs it on one worker node at a time; should two ever run it, their
// claims keep them off each other's batch. A sweep's error is logged and
// the next sweep tries again: the cursor moves only past what was done.
func (s *Service) RunExtractionSweeper(ctx context.Context, every, d time.Duration, stop <-chan struct{}) {
	if s.extractor == nil {
		return
	}
	// After a sweep that found no text the next waits longer (issue #35:
	// an idle node idles); D20's 10 s are far off either way.
	idle := max(every, min(4*every, time.Second))
	t := time.NewTimer(0)
	defer t.Stop()
	for start := time.Now(); time.Since(start) < d; {
		select {
		case <-ctx.Done():
			return
		case <-stop:
			return
		case <-t.C:
		}
		wait := idle
		for {
			n, err := s.SweepExtractions(ctx)
			if err != nil && ctx.Err() == nil {
				s.logger.Warn("extraction: sweep", "error", err)
			}
			if err != nil || n > 0 {
				wait = every
			}
			if err != nil || n < SweepBatch {
				break
			}
		}
		t.Reset(wait)
	}
}

// sweepContact is one contact's part of a batch: one extraction, over
// the contact's latest text in the batch.
type sweepContact struct {
	brand       *sweepBrand
	userID      int64
	first, last int // the contact's first and latest texts, indexes in the batch
	// done says the extraction ended (it ran, failed, or was not needed);
	// otherwise the next batch reads the contact's texts again.
	done bool
	kept []extracted
}

// sweepBrand is what a batch reads once per brand.
type sweepBrand struct {
	id    int64
	req   []extract.Field // the auto-collected fields
	byKey map[string]*parley.CustomField
	set   *parley.BrandSettings
	loc   *time.Location // set's time zone, loaded once a batch (tzdata is read on every load)
}

// SweepExtractions runs one batch of the extraction sweep (D20, #19): it
// reads the inbound texts stored after the cursor, skips keywords (D12)
// and the brands without an auto-collected field, runs one extraction per
// contact over its latest text, and writes the values with the cursor's
// move in the same transactions, so a crash redoes at most the batch and
// never passes a text. Writing is idempotent: a value set after its
// message stays, and the same value again changes nothing. It returns how
// many texts it read; 0 when nothing was new or another sweeper holds the
// batch.
func (s *Service) SweepExtractions(ctx context.Context) (int, error) {
	if s.extractor == nil {
		return 0, nil
	}
	b, err := s.db.ReadExtractionBatch(ctx, SweepBatch)
	if err != nil || b.End == b.From || b.Claimed {
		return 0, err
	}
	contacts, err := s.sweepContacts(ctx, b.Texts)
	if err != nil {
		return 0, err
	}
	if len(contacts) == 0 {
		_, err := s.db.SkipExtraction(ctx, b.From, b.End)
		return len(b.Texts), err
	}
	if ok, err := s.db.ClaimExtraction(ctx, b.From, s.db.Now().Add(sweepClaim)); err != nil || !ok {
		return 0, err
	}
	s.extractContacts(ctx, b.Texts, contacts)

	// The cursor stops before the first text of a contact whose
	// extraction did not end; only contacts whose texts all come before
	// that are written, the others are read again.
	cut := len(b.Texts)
	for _, c := range contacts {
		if !c.done {
			cut = min(cut, c.first)
		}
	}
	end := b.End
	if cut < len(b.Texts) {
		end = b.From
		if cut > 0 {
			end = b.Texts[cut-1].Pos
		}
	}
	var write []*sweepContact
	for _, c := range contacts {
		if c.done && c.last < cut && len(c.kept) > 0 {
			write = append(write, c)
		}
	}
	slices.SortFunc(write, func(a, b *sweepContact) int { return a.last - b.last })
	if at, err := s.writeSweep(ctx, b, write, end); errors.Is(err, store.ErrCursorMoved) {
		// Our claim ran out and another sweeper wrote the batch first.
		s.logger.Info("extraction: another sweeper wrote the batch")
		return 0, nil
	} else if err != nil {
		// The next sweep, maybe another node's, need not wait for the
		// claim to run out.
		s.db.ReleaseExtraction(context.WithoutCancel(ctx), at)
		return 0, err
	}
	return len(b.Texts), nil
}

// sweepContacts groups the texts that need an extraction by contact, in
// the order of their first text.
func (s *Service) sweepContacts(ctx context.Context, texts []store.InboundText) ([]*sweepContact, error) {
	var ids []int64
	for _, t := range texts {
		if !slices.Contains(ids, t.BrandID) {
			ids = append(ids, t.BrandID)
		}
	}
	auto, err := s.db.AutoCollectingBrands(ctx, ids)
	if err != nil {
		return nil, err
	}
	brands := map[int64]*sweepBrand{}
	byUser := map[[2]int64]*sweepContact{}
	var out []*sweepContact
	for i, t := range texts {
		if !auto[t.BrandID] || keyword(t.Body, stopWords) || keyword(t.Body, startWords) || keyword(t.Body, helpWords) {
			continue
		}
		b := brands[t.BrandID]
		if b == nil {
			if b, err = s.sweepBrand(ctx, t.BrandID); err != nil {
				return nil, err
			}
			brands[t.BrandID] = b
		}
		if b.set == nil {
			continue // deleted, or its fields changed since
		}
		k := [2]int64{t.BrandID, t.UserID}
		c := byUser[k]
		if c == nil {
			c = &sweepContact{brand: b, userID: t.UserID, first: i}
			byUser[k] = c
			out = append(out, c)
		}
		c.last = i
	}
	return out, nil
}

// sweepBrand reads a brand's auto-collected fields and settings; set is
// nil when there is nothing to extract.
func (s *Service) sweepBrand(ctx context.Context, brandID int64) (*sweepBrand, error) {
	b := &sweepBrand{id: brandID}
	all, err := s.db.ListCustomFields(ctx, brandID)
	if err != nil {
		return nil, err
	}
	b.byKey = make(map[string]*parley.CustomField, len(all))
	for _, f := range all {
		key := parley.CustomDataKey(f.FieldName)
		b.byKey[key] = f
		if f.IsAutoCollected {
			b.req = append(b.req, extractField(key, f))
		}
	}
	if len(b.req) == 0 {
		return b, nil
	}
	b.set, err = s.db.BrandSettings(ctx, brandID)
	if errors.Is(err, store.ErrNotFound) {
		return b, nil
	} else if err != nil {
		return nil, err
	}
	b.loc = brandLocation(b.set.TimeZone)
	return b, nil
}

// extractContacts runs the contacts' extractions, at most sweepParallel
// at once, each for at most sweepExtractFor, and starts none after
// sweepExtractFor: those not started are read again by the next batch.
// The first ones always end, so a slow model never stalls the sweep. The
// calls of an in-process extractor run one at a time, each paced (pace):
// 16 at once took both cores for ~8 ms every 250 ms, and the inbound
// texts arriving then waited.
func (s *Service) extractContacts(ctx context.Context, texts []store.InboundText, contacts []*sweepContact) {
	parallel, paced := sweepParallel, false
	if _, ok := s.extractor.(extract.InProcess); ok {
		parallel, paced = 1, true
	}
	sem := make(chan struct{}, parallel)
	stop := time.NewTimer(sweepExtractFor)
	defer stop.Stop()
	var wg sync.WaitGroup
launch:
	for _, c := range contacts {
		select {
		case sem <- struct{}{}:
		case <-stop.C:
			break launch
		case <-ctx.Done():
			break launch
		}
		wg.Go(func() {
			defer func() { <-sem }()
			cctx, cancel := context.WithTimeout(ctx, sweepExtractFor)
			defer cancel()
			start := time.Now()
			s.extractContact(cctx, c, texts[c.last].Pos.ID)
			if paced {
				pace(ctx, start)
			}
		})
	}
	wg.Wait()
}

// extractContact reads the contact's conversation up to its latest text
// messageID, asks the extractor for the brand's auto-collected fields and
// keeps the values that pass D6 (checkExtracted) in c.kept. An extractor
// that fails, after its own retries, or runs out of ctx's time gives the
// text up; c stays not done only when ctx was canceled (the node is
// stopping) or the database failed, so that the next batch tries again.
func (s *Service) extractContact(ctx context.Context, c *sweepContact, messageID int64) {
	b := c.brand
	log := s.logger.With("brand_id", b.id, "user_id", c.userID, "message_id", messageID)
	u, err := s.db.FindUserByID(ctx, b.id, c.userID)
	if errors.Is(err, store.ErrNotFound) {
		c.done = true // deleted since
		return
	} else if err != nil {
		log.Warn("extraction: reading the contact", "error", err)
		return
	}
	if optedOut(u) && !b.set.ExtractWhenOptedOut {
		s.skipped("opted_out")
		c.done = true
		return
	}
	msgs, err := s.db.ListMessages(ctx, b.id, c.userID, messageID+1, ConversationWindow)
	if err != nil {
		log.Warn("extraction: reading the conversation", "error", err)
		return
	}
	if len(msgs) == 0 || msgs[0].ID != messageID || msgs[0].Direction != parley.DirectionInbound {
		log.Warn("extraction: the inbound message is gone")
		c.done = true
		return
	}
	slices.Reverse(msgs) // oldest first, as the extractor reads them
	req := extract.Request{BrandID: b.id, Fields: b.req, Now: s.db.Now().In(b.loc),
		Conversation: make([]extract.Message, len(msgs))}
	for i, m := range msgs {
		req.Conversation[i] = extract.Message{Inbound: m.Direction == parley.DirectionInbound, Body: m.Body, At: m.DateCreated.Time}
	}
	if req.Known, err = knownValues(u.CustomData, b.byKey); err != nil {
		log.Warn("extraction: the contact's custom data", "error", err)
		c.done = true
		return
	}
	start := time.Now()
	vals, err := s.extractor.Extract(ctx, req)
	if errors.Is(err, extract.ErrOverBudget) {
		// The brand's daily calls are spent: trying again today would not
		// help, so the text is left unread.
		log.Info("extraction: skipped", "reason", "over_budget")
		s.skipped("over_budget")
		c.done = true
		return
	}
	if s.extractMetrics != nil {
		s.extractMetrics.Ran(err == nil, time.Since(start))
	}
	if err != nil {
		if !errors.Is(ctx.Err(), context.Canceled) {
			log.Warn("extraction: the extractor failed; the text is left unread", "error", err.Error())
			c.done = true
		}
		return
	}
	kept, invalid := checkExtracted(vals, b.byKey, msgs)
	if invalid > 0 {
		log.Info("extraction: values refused", "reason", "invalid", "count", invalid)
		if s.extractMetrics != nil {
			s.extractMetrics.Refused("invalid", invalid)
		}
	}
	c.kept, c.done = kept, true
}

func (s *Service) skipped(reason string) {
	if s.extractMetrics != nil {
		s.extractMetrics.Skipped(reason)
	}
}

// writeSweep writes the contacts' values, a few contacts a transaction
// (sweepChunk), in the order of their latest texts, each transaction
// moving the cursor past the latest text it wrote, and the last to end,
// releasing the claim; it paces between two (pace: back to back, three
// transactions of 16 contacts held SQLite's writer ~4 ms). A contact with
// a text after a transaction's cursor is written by a later one, or after
// a crash read again. It returns where the cursor is.
func (s *Service) writeSweep(ctx context.Context, b *store.ExtractionBatch, write []*sweepContact, end store.ExtractionPos) (store.ExtractionPos, error) {
	from := b.From
	chunk := s.sweepChunk()
	for {
		part := write[:min(chunk, len(write))]
		write = write[len(part):]
		to, until := end, time.Time{}
		if len(write) > 0 {
			to, until = b.Texts[part[len(part)-1].last].Pos, s.db.Now().Add(sweepClaim)
		}
		// Users locked in id order, as every writer of several does.
		part = slices.Clone(part)
		slices.SortFunc(part, func(a, b *sweepContact) int { return cmp.Compare(a.userID, b.userID) })
		var n [3]int // written, superseded, over D6's limits
		start := time.Now()
		err := s.db.WithTx(ctx, func(tx *store.Tx) error {
			n = [3]int{}
			for _, c := range part {
				w, sup, big, err := s.writeExtracted(ctx, tx, c)
				if err != nil {
					return err
				}
				n[0], n[1], n[2] = n[0]+w, n[1]+sup, n[2]+big
			}
			return tx.AdvanceExtraction(ctx, from, to, until)
		})
		if err != nil {
			return from, err
		}
		if s.extractMetrics != nil {
			s.extractMetrics.Written(n[0])
			s.extractMetrics.Refused("superseded", n[1])
			s.extractMetrics.Refused("invalid", n[2])
		}
		if from = to; len(write) == 0 {
			return from, nil
		}
		pace(ctx, start)
	}
}

// pace waits as long as the work since start took (sweepPauseMax at
// most), or until ctx ends: the sweep then takes half a core and half
// the writer's time at most, in slices, and the requests the node serves
// beside it find both free (#19: the inbound p99).
func pace(ctx context.Context, start time.Time) {
	t := time.NewTimer(min(time.Since(start), sweepPauseMax))
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// extracted is a value that passed D6, with the message it came from.
type extracted struct {
	key       string
	value     json.RawMessage
	messageID int64
	at        time.Time // the message's date
}

// writeExtracted writes a contact's kept values in tx, with history
// (source extraction, the message each value came from, D18) and a
// user.updated event. It reads the user under lock, and the last change of
// each field: a value changed after the message the extracted value came
// from is newer news and stays (D20: never overwrite what an operator or
// the API set later), which also makes a batch done again write nothing
// twice. It returns the values written, those superseded, and those over
// D6's limits of 100 keys and 16 KiB.
func (s *Service) writeExtracted(ctx context.Context, tx *store.Tx, c *sweepContact) (written, superseded, tooBig int, err error) {
	brandID, userID := c.brand.id, c.userID
	u, err := tx.FindUserForUpdate(ctx, brandID, userID)
	if errors.Is(err, store.ErrNotFound) {
		return 0, 0, 0, nil
	} else if err != nil {
		return 0, 0, 0, err
	}
	if optedOut(u) && !c.brand.set.ExtractWhenOptedOut {
		return 0, 0, 0, nil // opted out while the extractor ran
	}
	names := make([]string, len(c.kept))
	for i, k := range c.kept {
		names[i] = parley.HistoryFieldCustomData + k.key
	}
	last, err := tx.LastChanges(ctx, brandID, userID, names)
	if err != nil {
		return 0, 0, 0, err
	}
	upd := make(map[string]json.RawMessage, len(c.kept))
	from := make(map[string]int64, len(c.kept))
	for i, k := range c.kept {
		if t, ok := last[names[i]]; ok && t.After(k.at) {
			superseded++
			continue
		}
		upd[k.key], from[k.key] = k.value, k.messageID
	}
	if len(upd) == 0 {
		return 0, superseded, 0, nil
	}
	before := *u
	if u.CustomData, err = mergeCustomData(u.CustomData, upd, c.brand.byKey); err != nil {
		if _, ok := errors.AsType[*parley.Error](err); ok {
			s.logger.Info("extraction: values over D6's limits", "brand_id", brandID, "user_id", userID, "count", len(upd))
			return 0, superseded, len(upd), nil
		}
		return 0, 0, 0, err
	}
	if sameUser(&before, u) {
		return 0, superseded, 0, nil
	}
	u.DateLastUpdated = parley.Time{Time: tx.Now()}
	if err := tx.UpdateUser(ctx, u); err != nil {
		return 0, 0, 0, err
	}
	entries, err := changes(&before, u)
	if err != nil {
		return 0, 0, 0, err
	}
	for i := range entries {
		id := from[strings.TrimPrefix(entries[i].Field, parley.HistoryFieldCustomData)]
		entries[i].Source, entries[i].MessageID = parley.SourceExtraction, &id
	}
	if err := tx.InsertHistory(ctx, brandID, entries); err != nil {
		return 0, 0, 0, err
	}
	return len(entries), superseded, 0, s.emit(ctx, tx, brandID, parley.EventUserUpdated, u)
}

// checkExtracted keeps the values that name an auto-collected field once,
// come from one of the contact's own messages and pass D6 exactly as an
// API update would (parseCustomData); it counts the others. msgs is the
// conversation, oldest first.
func checkExtracted(vals []extract.Value, byKey map[string]*parley.CustomField, msgs []*parley.Message) ([]extracted, int) {
	var kept []extracted
	invalid := 0
	seen := make(map[string]bool, len(vals))
	for _, v := range vals {
		f := byKey[v.Key]
		if f == nil || !f.IsAutoCollected || seen[v.Key] || v.From < 0 || v.From >= len(msgs) ||
			msgs[v.From].Direction != parley.DirectionInbound {
			invalid++
			continue
		}
		raw, err := json.Marshal(map[string]json.RawMessage{v.Key: v.Value})
		if err != nil { // not JSON at all
			invalid++
			continue
		}
		out, err := parseCustomData(raw, map[string]*parley.CustomField{v.Key: f})
		if err != nil || out[v.Key] == nil { // D6 refuses it, or it is null
			invalid++
			continue
		}
		seen[v.Key] = true
		m := msgs[v.From]
		kept = append(kept, extracted{key: v.Key, value: out[v.Key], messageID: m.ID, at: m.DateCreated.Time})
	}
	return kept, invalid
}

// extractField describes a field to the extractor.
func extractField(key string, f *parley.CustomField) extract.Field {
	return extract.Field{Key: key, Name: f.FieldName, Type: f.CustomDataType, Subtype: f.Subtype,
		Enum: f.AvailableEnumValues, Prompt: f.ExtractionPrompt, IncludeUserAnswers: f.IncludeUserAnswers,
		EmphasizeCurrent: f.IsEmphasizeCurrent, EmphasizePersonal: f.IsEmphasizePersonal}
}

// knownValues returns the contact's current values of the fields with
// include_in_ai_prompt, and of no other field (D20).
func knownValues(data json.RawMessage, byKey map[string]*parley.CustomField) (map[string]json.RawMessage, error) {
	vals, err := dataValues(data)
	if err != nil {
		return nil, err
	}
	known := map[string]json.RawMessage{}
	for k, v := range vals {
		if f := byKey[k]; f != nil && f.IncludeInAIPrompt {
			known[k] = v
		}
	}
	return known, nil
}

func optedOut(u *parley.User) bool { return u.MessagingConsent != nil && !*u.MessagingConsent }

// brandLocation is the brand's time zone (D17); UTC if it cannot load,
// which settings checked when saved make unlikely.
func brandLocation(name string) *time.Location {
	if loc, err := time.LoadLocation(name); err == nil {
		return loc
	}
	return time.UTC
}
