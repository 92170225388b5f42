package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/csvimport"
	"github.com/parleyhq/parley/internal/store"
	"gocloud.dev/gcerrors"
)

// RunOptions shape one run of an import.
type RunOptions struct {
	// Until ends the run after the batch that passes it, the import not yet
	// done; zero runs to the end.
	Until time.Time
	// Progress, when set, sees the import after each committed batch.
	Progress func(*parley.Import)
}

// errLostImport says another run of the import committed past this one.
var errLostImport = errors.New("service: the import moved on under another run")

// RunImport works an import from its last committed batch. Each batch of
// rows commits in one transaction with its events, its rejected rows and
// the import's progress, so a run that stops anywhere (a crash, ctx
// ending) leaves the import at a batch boundary, and the next run goes on
// from there: no row is imported twice. It reports whether the import has
// ended.
func (im *Importer) RunImport(ctx context.Context, brandID, id int64, opt RunOptions) (done bool, err error) {
	rec, err := im.s.db.FindImport(ctx, brandID, id)
	if errors.Is(err, store.ErrNotFound) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	if rec.Status == parley.ImportCompleted || rec.Status == parley.ImportFailed {
		return true, nil
	}
	fields, err := im.s.customFields(ctx, brandID)
	if err != nil {
		return false, err
	}
	// A field deleted since the upload leaves its column mapped: its cells
	// then fail like an unknown custom_data key of POST /users.
	cols, unknown, err := mapColumns(rec.Columns, fields, rec.Mapping)
	if err == nil && len(unknown) > 0 {
		for _, name := range unknown {
			if !strings.HasPrefix(strings.ToLower(name), parley.CustomColumnPrefix) {
				err = unknownColumns(unknown, fields)
			}
		}
	}
	if err != nil {
		return true, im.fail(ctx, rec, err)
	}
	rc, err := im.s.blob.NewRangeReader(ctx, rec.BlobKey, rec.NextOffset, -1, nil)
	if err != nil {
		// Another run may have just ended the import and removed its file.
		if gcerrors.Code(err) == gcerrors.NotFound {
			if cur, ferr := im.s.db.FindImport(ctx, brandID, id); ferr == nil &&
				(cur.Status == parley.ImportCompleted || cur.Status == parley.ImportFailed) {
				return true, nil
			}
		}
		return false, fmt.Errorf("service: open import file: %w", err)
	}
	defer rc.Close()
	comma, _ := utf8First(rec.Delimiter)
	rows := &rowReader{s: im.s, batchSize: im.BatchSize, brandID: rec.BrandID, country: rec.DefaultCountry,
		cols: cols, fields: fields, rd: csvimport.NewReader(rc, comma, rec.NextOffset, rec.NextLine)}
	run := &importRun{im: im, rec: rec, rows: rows}
	next, stop := rows.readAhead(ctx)
	defer stop() // before rc closes
	for {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		b, ok := <-next
		if !ok { // ended with ctx
			return false, ctx.Err()
		}
		var pe *parley.Error
		if errors.As(b.err, &pe) {
			// The stored file no longer reads as it did when it was accepted.
			return true, im.fail(ctx, rec, b.err)
		}
		if b.err != nil {
			return false, b.err
		}
		if b.eof {
			im.analyze(ctx, rec, len(b.rows))
		}
		if err := run.commit(ctx, b); errors.Is(err, errLostImport) {
			return false, nil
		} else if err != nil {
			return false, err
		}
		if opt.Progress != nil {
			out := rec.Import
			opt.Progress(&out)
		}
		if b.eof {
			im.s.blob.Delete(context.WithoutCancel(ctx), rec.BlobKey)
			// This node's audience engine catches the brand up now, not at
			// its next question (issue #34); other nodes' follow the log.
			im.s.aud.Changed(brandID)
			return true, nil
		}
		if !opt.Until.IsZero() && time.Now().After(opt.Until) {
			return false, nil
		}
	}
}

// analyze refreshes the planner's statistics of the contacts before the
// last batch commits, when the import has written enough rows to move
// them (DefaultImportAnalyzeAfter): a client that sees the import
// completed then counts a segment on plans made for the brand as it now
// is (issue #34). It runs outside the batches' transactions; a failure
// is logged, not the import's.
func (im *Importer) analyze(ctx context.Context, rec *store.ImportRecord, last int) {
	if rec.Created+rec.Updated+int64(last) < im.AnalyzeAfter {
		return
	}
	if err := im.s.db.AnalyzeContacts(ctx); err != nil {
		im.s.logger.Warn("import: analyze after a bulk import", "brand_id", rec.BrandID, "import_id", rec.ID, "error", err)
	}
}

func utf8First(s string) (rune, bool) {
	for _, r := range s {
		return r, true
	}
	return ',', false
}

// Work runs an import for the job queue until the given time. On the job's
// last attempt an error fails the import, so it never stays running.
func (im *Importer) Work(ctx context.Context, brandID, id int64, until time.Time, final bool) (bool, error) {
	done, err := im.RunImport(ctx, brandID, id, RunOptions{Until: until})
	// A node that is stopping will run it again; anything else on the last
	// attempt, its own timeout included, ends it.
	if err != nil && final && !errors.Is(ctx.Err(), context.Canceled) {
		im.s.logger.Error("import failed", "brand_id", brandID, "import_id", id, "error", err)
		if rec, ferr := im.s.db.FindImport(ctx, brandID, id); ferr == nil {
			im.fail(ctx, rec, parley.Errorf(parley.EInternal, "The import could not be completed; the rows committed so far stay imported."))
		}
	}
	return done, err
}

// FailImport ends an unfinished import as failed with the reason (the CLI
// does when it is interrupted).
func (im *Importer) FailImport(ctx context.Context, brandID, id int64, reason string) error {
	rec, err := im.s.db.FindImport(ctx, brandID, id)
	if err != nil {
		return err
	}
	return im.fail(ctx, rec, errors.New(reason))
}

// fail ends the import as failed; the reason is shown to the caller, so it
// is an *parley.Error's message or the caller's own text.
func (im *Importer) fail(ctx context.Context, rec *store.ImportRecord, reason error) error {
	ctx = context.WithoutCancel(ctx)
	msg := reason.Error()
	var pe *parley.Error
	if errors.As(reason, &pe) {
		msg = pe.Message
		if pe.Field != "" && !strings.HasPrefix(msg, pe.Field+":") {
			msg = pe.Field + ": " + msg
		}
	}
	err := im.s.db.WithTx(ctx, func(tx *store.Tx) error {
		ok, err := tx.FailImport(ctx, rec.BrandID, rec.ID, msg)
		if err != nil || !ok {
			return err
		}
		return tx.DeleteImportPhones(ctx, rec.BrandID, rec.ID)
	})
	if err == nil {
		im.s.blob.Delete(ctx, rec.BlobKey)
	}
	return err
}

// importRun is one run of an import.
type importRun struct {
	im   *Importer
	rec  *store.ImportRecord
	rows *rowReader // reads ahead: only its immutable fields are read here
}

// outcome is what a row did in one attempt at committing its batch.
type outcome int

const (
	outFailed outcome = iota
	outCreated
	outUpdated
	outSkipped
)

// commit writes a batch, its events, its rejected rows and the import's
// progress in one transaction. It leaves the rows untouched, so a
// transaction that is retried starts over.
func (run *importRun) commit(ctx context.Context, b readBatch) error {
	batch, eof := b.rows, b.eof
	s, rec := run.im.s, run.rec
	brandID := rec.BrandID
	update := rec.OnDuplicate == parley.OnDuplicateUpdate
	next := *rec
	o := parley.Origin{Source: parley.SourceImport, Detail: strconv.FormatInt(rec.ID, 10)}
	err := s.db.WithForegroundOriginTx(ctx, o, func(tx *store.Tx) error {
		next = *rec
		ok, err := tx.ClaimImportBatch(ctx, brandID, rec.ID, rec.NextOffset)
		if err != nil {
			return err
		}
		if !ok {
			return errLostImport
		}
		// The first row of the file with a number has it; later rows with
		// it are reported, whether in this batch or after an earlier one.
		first := map[string]int64{}
		var phones []string
		var lines []int64
		for _, r := range batch {
			if len(r.errs) > 0 {
				continue
			}
			if _, dup := first[r.user.PhoneNumber]; !dup {
				first[r.user.PhoneNumber] = r.line
				phones, lines = append(phones, r.user.PhoneNumber), append(lines, r.line)
			}
		}
		taken, err := tx.ClaimImportPhones(ctx, brandID, rec.ID, phones, lines)
		if err != nil {
			return err
		}
		maps.Copy(first, taken)
		errs := make([]*parley.ImportError, len(batch))
		for i, r := range batch {
			switch {
			case len(r.errs) > 0:
				errs[i] = r.errs[0]
			case first[r.user.PhoneNumber] != r.line:
				errs[i] = duplicateInFile(r, first[r.user.PhoneNumber])
			}
		}

		// Every number is offered as a new user, in one statement: the
		// brand's live-number index refuses those it has, and only they
		// are looked up. A file of new users so never searches the
		// brand's users, whose planner statistics lag while an import
		// grows them.
		now := parley.Time{Time: tx.Now()}
		created := make([]*parley.User, len(batch))
		var creates []*parley.User
		for i, r := range batch {
			if errs[i] != nil {
				continue
			}
			u := *r.user
			u.DateCreated, u.DateLastUpdated = now, now
			if !r.consentCell && rec.MessagingConsentDefault != nil {
				c := *rec.MessagingConsentDefault
				u.MessagingConsent = &c
			}
			created[i] = &u
			creates = append(creates, &u)
		}
		// Their creation's history is written by the same statements
		// (D18): a batch binds no parameter per entry (issue #35).
		if err := tx.InsertUsersWithHistory(ctx, creates); err != nil {
			return err
		}
		var existing []string
		for i, u := range created {
			if u != nil && u.ID == 0 {
				created[i] = nil
				existing = append(existing, u.PhoneNumber)
			}
		}
		live, err := tx.FindUsersByPhones(ctx, brandID, existing)
		if err != nil {
			return err
		}

		hooks, err := s.db.ListWebhooks(ctx, tx, brandID, true)
		if err != nil {
			return err
		}
		em := &batchEmitter{s: s, tx: tx, brandID: brandID, hooks: hooks}
		var history []parley.HistoryEntry
		var rejected []parley.ImportError
		counts := map[outcome]int64{}
		for i, r := range batch {
			out := outFailed
			switch {
			case errs[i] != nil:
			case created[i] != nil:
				u := created[i]
				out = outCreated
				if err := em.emit(ctx, parley.EventUserCreated, u); err != nil {
					return err
				}
				// A new contact has no runs for a refusal to end.
				em.created = append(em.created, u.ID)
				if u.MessagingConsent != nil && *u.MessagingConsent {
					em.subscribed = append(em.subscribed, u.ID)
				}
				if u.MessagingConsent != nil {
					if err := em.consent(ctx, u); err != nil {
						return err
					}
				}
			case live[r.user.PhoneNumber] == nil:
				return fmt.Errorf("service: import: user %s neither created nor found", r.user.PhoneNumber)
			case !update:
				out = outSkipped
			default:
				var err error
				out, errs[i], err = run.merge(ctx, tx, em, r, live[r.user.PhoneNumber], &history)
				if err != nil {
					return err
				}
			}
			if errs[i] != nil {
				all := r.errs
				if len(all) == 0 {
					all = errs[i : i+1]
				}
				for _, e := range all {
					e.Cells = r.cells
					rejected = append(rejected, *e)
				}
			}
			counts[out]++
		}
		if err := tx.InsertHistory(ctx, brandID, history); err != nil {
			return err
		}
		if err := em.enterFlows(ctx); err != nil {
			return err
		}
		if err := em.flush(ctx); err != nil {
			return err
		}
		if err := tx.InsertImportErrors(ctx, brandID, rec.ID, rejected); err != nil {
			return err
		}

		next.Status = parley.ImportRunning
		next.Created += counts[outCreated]
		next.Updated += counts[outUpdated]
		next.Skipped += counts[outSkipped]
		next.Failed += counts[outFailed]
		next.ProcessedRows += int64(len(batch))
		next.NextOffset, next.NextLine = b.offset, b.line
		if eof {
			next.Status = parley.ImportCompleted
			next.DateCompleted = &now
			if err := tx.DeleteImportPhones(ctx, brandID, rec.ID); err != nil {
				return err
			}
		}
		return tx.SaveImportProgress(ctx, &next)
	})
	if err != nil {
		return err
	}
	*rec = next
	return nil
}

// merge applies an update row to the existing user u, as POST /users/{id}
// would: only the cells with a value change it.
func (run *importRun) merge(ctx context.Context, tx *store.Tx, em *batchEmitter, r *row, u *parley.User,
	history *[]parley.HistoryEntry) (outcome, *parley.ImportError, error) {
	before := *u
	if err := run.im.s.applyFields(u, &r.fields); err != nil {
		e, err := run.rows.rowError(r.line, err)
		return outFailed, e, err
	}
	if r.upd != nil {
		var err error
		if u.CustomData, err = mergeCustomData(u.CustomData, r.upd, run.rows.fields); err != nil {
			e, err := run.rows.rowError(r.line, err)
			return outFailed, e, err
		}
	}
	if sameUser(&before, u) {
		return outSkipped, nil, nil
	}
	u.DateLastUpdated = parley.Time{Time: tx.Now()}
	if err := tx.UpdateUser(ctx, u); err != nil {
		return outFailed, nil, err
	}
	if err := em.emit(ctx, parley.EventUserUpdated, u); err != nil {
		return outFailed, nil, err
	}
	entries, err := changes(&before, u)
	if err != nil {
		return outFailed, nil, err
	}
	*history = append(*history, entries...)
	if !equalBoolPtr(before.MessagingConsent, u.MessagingConsent) {
		if err := em.consent(ctx, u); err != nil {
			return outFailed, nil, err
		}
		if err := em.consentChanged(ctx, before.MessagingConsent, u); err != nil {
			return outFailed, nil, err
		}
	}
	return outUpdated, nil, nil
}

func duplicateInFile(r *row, firstLine int64) *parley.ImportError {
	return &parley.ImportError{Line: r.line, Field: "phone_number", Type: parley.EDuplicate,
		Msg: fmt.Sprintf("Duplicate entry for '%s': line %d of the file has this number", r.user.PhoneNumber, firstLine)}
}

// batchEmitter collects a batch's events and writes them in one statement
// at the end of the batch's transaction, their deliveries queued with the
// transaction's other jobs: the same events and payloads the API emits one
// by one (D11).
type batchEmitter struct {
	s       *Service
	tx      *store.Tx
	brandID int64
	hooks   []*store.WebhookRecord
	byType  map[string][]*store.WebhookRecord

	events   []*parley.Event
	payloads [][]byte

	// created and subscribed are the contacts the batch makes enter flows
	// (D21): enterFlows enters them together, a statement per flow.
	created, subscribed []int64
}

func (e *batchEmitter) emit(ctx context.Context, typ string, u *parley.User) error {
	if len(e.hooks) == 0 {
		return nil
	}
	if e.byType == nil {
		e.byType = map[string][]*store.WebhookRecord{}
	}
	hooks, ok := e.byType[typ]
	if !ok {
		hooks = slices.DeleteFunc(slices.Clone(e.hooks), func(w *store.WebhookRecord) bool { return !subscribes(w.EventTypes, typ) })
		e.byType[typ] = hooks
	}
	if len(hooks) == 0 {
		return nil
	}
	data, err := json.Marshal(u)
	if err != nil {
		return err
	}
	ev, payload, err := newEvent(e.tx.Now(), typ, data)
	if err != nil {
		return err
	}
	e.events, e.payloads = append(e.events, ev), append(e.payloads, payload)
	jobs := e.s.jobsOf(e.tx)
	for _, w := range hooks {
		jobs.Webhook(e.brandID, ev.ID, w.ID)
	}
	return nil
}

// flush writes the collected events.
func (e *batchEmitter) flush(ctx context.Context) error {
	if len(e.events) == 0 {
		return nil
	}
	return e.tx.InsertEvents(ctx, e.brandID, e.events, e.payloads)
}

// consentChanged is Service.consentChanged for a contact of the batch
// whose consent was prev: one who subscribed enters with the others, in
// enterFlows; an opt-out ends the contact's runs at once.
func (e *batchEmitter) consentChanged(ctx context.Context, prev *bool, u *parley.User) error {
	if u.MessagingConsent != nil && *u.MessagingConsent && (prev == nil || !*prev) {
		e.subscribed = append(e.subscribed, u.ID)
		return nil
	}
	return e.s.consentChanged(ctx, e.tx, e.brandID, u.ID, prev, u.MessagingConsent, parley.SourceImport)
}

// enterFlows enters the batch's created and subscribed contacts into the
// brand's flows of those triggers.
func (e *batchEmitter) enterFlows(ctx context.Context) error {
	if err := e.s.enterFlows(ctx, e.tx, e.brandID, parley.TriggerCreated, "", e.created, nil); err != nil {
		return err
	}
	return e.s.enterFlows(ctx, e.tx, e.brandID, parley.TriggerSubscribed, "", e.subscribed, nil)
}

// consent emits user.subscribed or user.unsubscribed for a consent the
// import set, as the API does (D11).
func (e *batchEmitter) consent(ctx context.Context, u *parley.User) error {
	if u.MessagingConsent == nil {
		return nil
	}
	typ := parley.EventUserUnsubscribed
	if *u.MessagingConsent {
		typ = parley.EventUserSubscribed
	}
	return e.emit(ctx, typ, u)
}
