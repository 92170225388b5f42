package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/delivery"
	"github.com/parleyhq/parley/internal/jobs"
	"github.com/parleyhq/parley/internal/phone"
	"github.com/parleyhq/parley/internal/sendwindow"
	"github.com/parleyhq/parley/internal/store"
)

// Error codes Parley sets on messages itself (beyond the provider's).
const (
	CodeUnsubscribed   = "recipient_unsubscribed"
	CodeRecipientGone  = "recipient_not_found"
	CodeOutcomeUnknown = "send_outcome_unknown"
	CodeMediaGone      = "media_unavailable"
	// D17: a MARKETING message over its recipient's frequency cap, or
	// whose sending window never opens (e.g. a brand window of 22:00–02:00
	// under the US rules), fails with these instead of waiting forever.
	CodeFrequencyCapped = "frequency_capped"
	CodeOutsideWindow   = "outside_sending_window"
)

// Idempotent is implemented by providers that accept a message at most once
// per message id, so a send interrupted by a crash may be repeated.
type Idempotent interface{ Idempotent() bool }

// DeliveryMetrics observes the pipeline; nil-safe no-ops when unset.
type DeliveryMetrics interface {
	Transition(status string)
	// Sent observes a message's time from creation to the provider.
	Sent(waited time.Duration)
	ProviderCall(provider, outcome string, d time.Duration)
	Retry()
}

// SetDelivery configures how messages leave: the provider, the public base
// URL media links are built on, and where to report metrics.
// A nil logger keeps the current one.
func (s *Service) SetDelivery(p delivery.Provider, publicURL string, m DeliveryMetrics, logger *slog.Logger) {
	s.provider, s.publicURL, s.metrics = p, strings.TrimRight(publicURL, "/"), m
	if logger != nil {
		s.logger = logger
		s.aud.Logger = logger
	}
}

// Deliver makes one attempt to hand a queued message to the provider (D8).
// It returns an error only for a temporary failure that is worth retrying;
// final says this is the last attempt, after which the message fails.
func (s *Service) Deliver(ctx context.Context, brandID, messageID int64, attempt int, final bool) error {
	d, err := s.db.FindDelivery(ctx, brandID, messageID)
	if errors.Is(err, store.ErrNotFound) {
		s.logger.Warn("delivery: message not found", "brand_id", brandID, "message_id", messageID)
		return nil
	}
	if err != nil {
		return err
	}
	if d.Message.Status != parley.StatusQueued {
		return nil // already handled: a retried job must not send again
	}
	if d.Message.FlowID != nil {
		// A flow's messages go out by its sender alone (flowsend.go), which
		// claims them; a job an earlier version queued for one (one job per
		// message) must not send it beside that sender. The runner queues
		// the sender of every flow with queued messages when it starts.
		return nil
	}
	log := s.logger.With("message_id", messageID, "brand_id", brandID, "provider", s.provider.Name(), "attempt", attempt)
	switch {
	case d.RecipientDeleted:
		log.Info("delivery attempt", "outcome", "failed", "error_code", CodeRecipientGone)
		return s.fail(ctx, brandID, messageID, CodeRecipientGone, "The recipient was deleted.")
	case d.Consent != nil && !*d.Consent && d.Message.AutoReply == "":
		// A keyword's automatic answer goes whatever the consent: it is
		// the confirmation of the opt-out (autoreply.go).
		// D8: consent false at dispatch → failed, provider not called.
		log.Info("delivery attempt", "outcome", "failed", "error_code", CodeUnsubscribed)
		return s.fail(ctx, brandID, messageID, CodeUnsubscribed, "The recipient has opted out of messages.")
	}
	// The brand's settings, read once for the window and cap (D17) and the
	// send rate (D16).
	set, err := s.db.BrandSettings(ctx, brandID)
	if err != nil {
		return err
	}
	if d.Message.Type == parley.TypeMarketing {
		if done, err := s.gateMarketing(ctx, log, brandID, set, d); done || err != nil {
			return err
		}
	}
	idempotent := isIdempotent(s.provider)
	if d.SendingAt != nil && !idempotent {
		// An earlier attempt reached the provider call and then the process
		// died: the provider may have the message. Sending again could reach
		// the recipient twice, so the message fails instead.
		log.Warn("delivery attempt", "outcome", "failed", "error_code", CodeOutcomeUnknown)
		return s.fail(ctx, brandID, messageID, CodeOutcomeUnknown, "A previous send attempt was interrupted; it may or may not have been sent.")
	}

	m := delivery.Message{ID: messageID, BrandID: brandID, From: d.From, To: d.To, Body: d.Message.Body}
	for _, id := range d.Message.MediaItemUUIDs {
		f, err := s.FindFileByID(ctx, brandID, id)
		if parley.ErrorCode(err) == parley.ENotFound {
			log.Info("delivery attempt", "outcome", "failed", "error_code", CodeMediaGone)
			return s.fail(ctx, brandID, messageID, CodeMediaGone, "Media item "+id+" no longer exists.")
		}
		if err != nil {
			return err
		}
		m.MediaURLs = append(m.MediaURLs, s.publicURL+s.MediaURLPath(f, s.db.Now().Add(24*time.Hour)))
	}
	// D16: the message takes its slot of the brand's send rate, ahead of
	// any campaign (pacing.go).
	if err := s.paceOne(ctx, brandID, set.SendRate); err != nil {
		return err
	}
	if done, err := s.handOverOne(ctx, log, brandID, d.Message, set, idempotent); done || err != nil {
		return err
	}

	start := time.Now()
	receipt, err := s.provider.Send(ctx, m)
	took := time.Since(start)
	var perr *delivery.Error
	switch {
	case err == nil:
		s.observeCall("sent", took)
		if s.metrics != nil {
			s.metrics.Sent(s.db.Now().Sub(d.Message.DateCreated.Time))
		}
		log.Info("delivery attempt", "outcome", "sent", "provider_id", receipt.ProviderID, "duration", took)
		return s.db.WithActivityGroupTx(ctx, parley.Origin{Source: parley.SourceCarrier}, func(ctx context.Context, tx *store.Tx) error {
			ok, err := s.transition(ctx, tx, brandID, messageID, store.Transition{Status: parley.StatusSent, At: tx.Now(),
				ProviderID: receipt.ProviderID, Provider: s.provider.Name()})
			if err != nil || ok {
				return err
			}
			return tx.SetProviderID(ctx, brandID, messageID, receipt.ProviderID) // a callback overtook us
		})
	case errors.As(err, &perr) && perr.Unsubscribed:
		s.observeCall("unsubscribed", took)
		log.Info("delivery attempt", "outcome", "failed", "error_code", CodeUnsubscribed, "provider_code", perr.Code)
		return s.failUnsubscribed(ctx, brandID, messageID, d.Message.UserID, perr.Code)
	case errors.As(err, &perr) && !perr.Temporary:
		s.observeCall("refused", took)
		log.Info("delivery attempt", "outcome", "failed", "error_code", perr.Code, "duration", took)
		return s.fail(ctx, brandID, messageID, perr.Code, perr.Message)
	}
	// Temporary: the provider did not take the message, so a retry may send.
	s.observeCall("temporary_error", took)
	log.Warn("delivery attempt", "outcome", "retry", "error", err.Error(), "duration", took)
	if cerr := s.db.WithTx(ctx, func(tx *store.Tx) error { return tx.ClearSending(ctx, brandID, messageID) }); cerr != nil {
		return cerr
	}
	if final {
		code, msg := "provider_unavailable", err.Error()
		if perr != nil {
			code, msg = perr.Code, perr.Message
		}
		return s.fail(ctx, brandID, messageID, code, msg)
	}
	if s.metrics != nil {
		s.metrics.Retry()
	}
	return err
}

// SetUSSendingRules turns the US rules of D17 on (the default) or off; the
// brand's sending window applies either way.
func (s *Service) SetUSSendingRules(on bool) { s.usSendingRules = on }

// gateMarketing applies D17's sending window to a MARKETING message at
// dispatch. Outside the recipient's window it records the next opening in
// scheduled_at and returns a *jobs.Held, which the worker turns into a
// snooze; the message stays queued and scheduled_at keeps that value once
// sent. A window that never opens fails the message. done says the
// attempt ends here. The frequency cap is decided later, at the hand-over
// (handOverOne), so messages sent while this one was held count.
func (s *Service) gateMarketing(ctx context.Context, log *slog.Logger, brandID int64, set *parley.BrandSettings, d *store.Delivery) (done bool, err error) {
	id := d.Message.ID
	w, err := sendwindow.ParseWindow(set.SendingWindow.Start, set.SendingWindow.End)
	if err != nil {
		return false, err // settings are checked when saved: not the message's fault
	}
	now := s.db.Now()
	zones := sendwindow.Zones(d.ZipZone, d.To, set.TimeZone)
	open, err := sendwindow.NextOpening(now, zones, sendwindow.State(d.StateCode, d.To), w, s.usSendingRules)
	switch {
	case errors.Is(err, sendwindow.ErrNoOpening):
		log.Info("delivery attempt", "outcome", "failed", "error_code", CodeOutsideWindow)
		return true, s.fail(ctx, brandID, id, CodeOutsideWindow, "The sending window never opens in the recipient's local time.")
	case err != nil:
		return false, err
	case open.After(now):
		var held bool
		if err := s.db.WithTx(ctx, func(tx *store.Tx) error {
			held, err = tx.HoldMessage(ctx, brandID, id, open)
			return err
		}); err != nil || !held {
			return true, err
		}
		log.Info("delivery attempt", "outcome", "held", "scheduled_at", open)
		return true, &jobs.Held{Until: open, Wait: open.Sub(now)}
	}
	return false, nil
}

// handOverOne hands a single message over (store.HandOverMessages), just
// before the provider call: consent (D8) and, for a MARKETING message,
// the frequency cap (D17) are decided there, against the recipient's
// messages sent and in flight, and for a provider that is not idempotent
// the attempt is recorded, so a retry after a crash knows a send may have
// happened. An idempotent provider with no cap to apply needs nothing
// recorded (it accepts the message once however often it is sent): a
// read decides. done says the attempt ends here: the message failed, or
// is no longer queued.
func (s *Service) handOverOne(ctx context.Context, log *slog.Logger, brandID int64, m *parley.Message, set *parley.BrandSettings, idempotent bool) (done bool, err error) {
	if s.beforeHandOver != nil {
		s.beforeHandOver(brandID, []int64{m.ID})
	}
	h := s.handOver(set, m.Type, idempotent)
	if h.Provider == "" && h.Cap == nil {
		ok, err := s.db.Deliverable(ctx, brandID, m.ID)
		if err != nil || ok {
			return false, err
		}
	}
	err = s.db.WithTx(ctx, func(tx *store.Tx) error {
		done = true
		if h.Provider != "" || h.Cap != nil {
			handed, err := tx.HandOverMessages(ctx, brandID, []int64{m.ID}, h)
			if err != nil || len(handed) == 1 {
				done = false
				return err
			}
		}
		fails, err := s.refusedFails(ctx, tx, brandID, []int64{m.ID}, set)
		for _, f := range fails {
			log.Info("delivery attempt", "outcome", "failed", "error_code", f.code)
		}
		if err != nil {
			return err
		}
		return s.failCampaignMessages(ctx, tx, brandID, fails)
	})
	return done, err
}

// handOver is what a hand-over of messages of type typ records and
// checks, besides consent: the attempt for a provider that is not
// idempotent, the brand's frequency cap for a MARKETING message.
func (s *Service) handOver(set *parley.BrandSettings, typ string, idempotent bool) store.HandOver {
	var h store.HandOver
	if !idempotent {
		h.Provider = s.provider.Name()
	}
	if c := set.FrequencyCap; c != nil && typ == parley.TypeMarketing {
		h.Cap = &store.HandOverCap{Since: s.db.Now().Add(-time.Duration(c.PerHours) * time.Hour), Max: c.MaxMessages}
	}
	return h
}

// refusedFails reads why a hand-over left the brand's messages ids
// (store.RefusedHandOvers) and returns how each fails; a message no
// longer queued is left alone.
func (s *Service) refusedFails(ctx context.Context, tx *store.Tx, brandID int64, ids []int64, set *parley.BrandSettings) ([]campaignFail, error) {
	why, err := tx.RefusedHandOvers(ctx, brandID, ids)
	if err != nil {
		return nil, err
	}
	var fails []campaignFail
	for _, id := range ids {
		f := campaignFail{id: id}
		switch why[id] {
		case store.RefusedDeleted:
			f.code, f.msg = CodeRecipientGone, "The recipient was deleted."
		case store.RefusedUnsubscribed:
			f.code, f.msg = CodeUnsubscribed, "The recipient has opted out of messages."
		case store.RefusedCapped:
			f.code, f.msg = CodeFrequencyCapped, "The recipient is at the brand's frequency cap."
			if c := set.FrequencyCap; c != nil {
				f.msg = fmt.Sprintf("The recipient already has %d marketing messages sent or being sent in the last %d hours (the brand's frequency cap).",
					c.MaxMessages, c.PerHours)
			}
		default:
			continue
		}
		fails = append(fails, f)
	}
	return fails, nil
}

func isIdempotent(p delivery.Provider) bool {
	i, ok := p.(Idempotent)
	return ok && i.Idempotent()
}

func (s *Service) observeCall(outcome string, d time.Duration) {
	if s.metrics != nil {
		s.metrics.ProviderCall(s.provider.Name(), outcome, d)
	}
}

func (s *Service) observeTransition(status string) {
	if s.metrics != nil {
		s.metrics.Transition(status)
	}
}

// fail moves a queued or sent message to failed with the code and message.
func (s *Service) fail(ctx context.Context, brandID, messageID int64, code, msg string) error {
	return s.db.WithTx(ctx, func(tx *store.Tx) error {
		_, err := s.transition(ctx, tx, brandID, messageID, store.Transition{Status: parley.StatusFailed, At: tx.Now(), ErrorCode: &code, ErrorMessage: &msg})
		return err
	})
}

// transition moves a message (store.TransitionMessage), counts it once the
// transaction commits, and emits its message.<status> event in the same
// transaction.
func (s *Service) transition(ctx context.Context, tx *store.Tx, brandID, messageID int64, t store.Transition) (bool, error) {
	ok, err := tx.TransitionMessage(ctx, brandID, messageID, t)
	if err != nil || !ok {
		return ok, err
	}
	tx.AfterCommit(func() { s.observeTransition(t.Status) })
	typ := "message." + t.Status
	hooks, err := s.hooksFor(ctx, tx, brandID, typ)
	if err != nil || len(hooks) == 0 {
		return true, err
	}
	m, err := tx.FindMessage(ctx, brandID, messageID)
	if err != nil {
		return true, err
	}
	return true, s.emitTo(ctx, tx, brandID, typ, hooks, m)
}

// failUnsubscribed fails a message the carrier refused because the
// recipient opted out, and records the opt-out on the user.
func (s *Service) failUnsubscribed(ctx context.Context, brandID, messageID, userID int64, providerCode string) error {
	code, msg := CodeUnsubscribed, "The carrier reports that the recipient has opted out."
	return s.db.WithTx(ctx, func(tx *store.Tx) error {
		if _, err := s.transition(ctx, tx, brandID, messageID, store.Transition{Status: parley.StatusFailed, At: tx.Now(), ErrorCode: &code, ErrorMessage: &msg}); err != nil {
			return err
		}
		return s.setConsent(ctx, tx, brandID, userID, false, parley.SourceCarrier, s.provider.Name()+":"+providerCode, messageID)
	})
}

// setConsent changes a user's consent when the value actually changes,
// and records the change with its source, detail and message (D18).
func (s *Service) setConsent(ctx context.Context, tx *store.Tx, brandID, userID int64, value bool, source, detail string, messageID int64) error {
	u, err := tx.FindUserByID(ctx, brandID, userID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	if u.MessagingConsent != nil && *u.MessagingConsent == value {
		return nil
	}
	prev := u.MessagingConsent
	u.MessagingConsent, u.DateLastUpdated = &value, parley.Time{Time: tx.Now()}
	if err := tx.UpdateUser(ctx, u); err != nil {
		return err
	}
	e := parley.HistoryEntry{UserID: userID, Field: parley.HistoryFieldConsent, OldValue: boolJSON(prev), NewValue: boolJSON(&value),
		Source: source, Detail: detail, MessageID: &messageID}
	if err := tx.InsertHistory(ctx, brandID, []parley.HistoryEntry{e}); err != nil {
		return err
	}
	if err := s.consentChanged(ctx, tx, brandID, userID, prev, &value, source); err != nil {
		return err
	}
	return s.emit(ctx, tx, brandID, consentEvent(value), u)
}

// ApplyStatus implements delivery.Sink.
func (s *Service) ApplyStatus(ctx context.Context, u delivery.StatusUpdate) error {
	// A report is a carrier's text (#31): an id no carrier sends names no
	// message, and the error's text is stored cleaned, never failing the
	// engine (PostgreSQL refuses NUL), so the report is not lost.
	if !cleanID(u.ProviderID) {
		s.logger.Info("status update with an unreadable provider id: ignored", "provider", s.provider.Name())
		return nil
	}
	u.ErrorCode, _ = parley.CarrierText(u.ErrorCode)
	u.ErrorMessage, _ = parley.CarrierText(u.ErrorMessage)
	m, err := s.db.FindMessageByProviderID(ctx, s.provider.Name(), u.ProviderID)
	if errors.Is(err, store.ErrNotFound) && u.MessageID != 0 {
		// One read decides, so a send recorded between two reads cannot
		// make the report look like one about an unknown message.
		var provider string
		m, provider, err = s.db.FindOutbound(ctx, u.MessageID)
		switch {
		case err != nil:
		case provider == "" && m.Status == parley.StatusQueued:
			// The worker's write of the send has not landed yet.
			return delivery.ErrNotYet
		case provider != s.provider.Name():
			err = store.ErrNotFound // a report names only a message this provider was asked to send
		}
	}
	if errors.Is(err, store.ErrNotFound) {
		s.logger.Info("status update for an unknown provider id: ignored", "provider", s.provider.Name(), "provider_id", u.ProviderID)
		return nil
	}
	if err != nil {
		return err
	}
	if u.At.IsZero() {
		u.At = s.db.Now()
	}
	// Reports arrive many at a time (the sim's batches, a carrier's
	// callbacks): they share commits.
	return s.db.WithActivityGroupTx(ctx, parley.Origin{Source: parley.SourceCarrier, Detail: u.ErrorCode}, func(ctx context.Context, tx *store.Tx) error {
		t := store.Transition{Status: u.Status, At: u.At.UTC(), ProviderID: u.ProviderID}
		if u.Status == parley.StatusFailed || u.Status == parley.StatusUndelivered {
			code, msg := u.ErrorCode, u.ErrorMessage
			if u.Unsubscribed {
				code = CodeUnsubscribed
			}
			t.ErrorCode, t.ErrorMessage = &code, &msg
		}
		ok, err := s.transition(ctx, tx, m.BrandID, m.ID, t)
		if err != nil || !ok {
			return err // a repeated or late update changes nothing
		}
		if u.Unsubscribed {
			return s.setConsent(ctx, tx, m.BrandID, m.UserID, false, parley.SourceCarrier, s.provider.Name()+":"+u.ErrorCode, m.ID)
		}
		return nil
	})
}

// Keywords (D12): whole message, any case.
var (
	stopWords  = []string{"STOP", "STOPALL", "UNSUBSCRIBE", "CANCEL", "END", "QUIT", "REVOKE", "OPTOUT"}
	startWords = []string{"START", "UNSTOP", "YES"}
	helpWords  = []string{"HELP", "INFO"}
)

func keyword(body string, words []string) bool {
	body = strings.TrimSpace(body)
	for _, w := range words {
		if equalFoldASCII(body, w) {
			return true
		}
	}
	return false
}

// Default keyword replies, used when the brand has not set its own.
const (
	defaultStopReply  = "%s: You are unsubscribed and will receive no more messages. Reply START to resubscribe."
	defaultStartReply = "%s: You are subscribed again. Reply STOP to unsubscribe, HELP for help."
	defaultHelpReply  = "%s: Reply STOP to unsubscribe. Msg&data rates may apply."
)

// ReceiveInbound implements delivery.Sink: it stores the message (creating
// the user when the number is new) and applies opt-out and opt-in
// keywords. It returns no reply: a keyword's answer is queued as an
// outbound message of the conversation (autoreply.go).
func (s *Service) ReceiveInbound(ctx context.Context, in delivery.Inbound) (string, error) {
	// A number or id no carrier sends (a control character, invalid UTF-8)
	// is not matched against the database, where PostgreSQL would fail on it.
	if !cleanID(in.To) {
		s.logger.Info("inbound message to an unreadable number: ignored")
		return "", nil
	}
	in.ProviderID, _ = parley.CarrierText(in.ProviderID)
	brand, replies, err := s.db.FindBrandByPhone(ctx, in.To)
	if errors.Is(err, store.ErrNotFound) {
		s.logger.Info("inbound message to an unknown number: ignored", "to_suffix", lastDigits(in.To))
		return "", nil
	}
	if err != nil {
		return "", err
	}
	from, ok := phone.Normalize(in.From, phone.Possible)
	if !ok {
		s.logger.Info("inbound message from an invalid number: ignored", "brand_id", brand.ID)
		return "", nil
	}
	in.From = from
	// A keyword's answer is a stored message the delivery worker sends
	// (queueAutoReply), never the callback's answer: see autoreply.go.
	_, _, err = s.receive(ctx, parley.Origin{}, brand, replies, in)
	return "", err
}

// receive stores in, a message from the E.164 number in.From to brand,
// creating the user when the number is new, applies the keywords of D12,
// with its text made storable and cut to length (parley.CarrierText, #31),
// and returns the stored message and the reply. Every inbound path — a
// carrier's callback, the simulator — comes through here. The message is
// the transaction's answer (an Idempotency-Key's, D13).
func (s *Service) receive(ctx context.Context, o parley.Origin, brand *parley.Brand, replies store.BrandReplies, in delivery.Inbound) (*parley.Message, string, error) {
	if in.At.IsZero() {
		in.At = s.db.Now()
	}
	body, truncated := parley.CarrierText(in.Body)
	in.Body = body
	var msg *parley.Message
	var reply string
	err := s.db.WithOriginTx(ctx, o, func(tx *store.Tx) error {
		reply = ""
		u, err := tx.FindUserByPhone(ctx, brand.ID, in.From)
		if errors.Is(err, store.ErrNotFound) {
			u = &parley.User{BrandID: brand.ID, PhoneNumber: in.From,
				DateCreated: parley.Time{Time: tx.Now()}, DateLastUpdated: parley.Time{Time: tx.Now()}}
			if err = tx.InsertUser(ctx, u); err == nil {
				err = s.emit(ctx, tx, brand.ID, parley.EventUserCreated, u)
			}
			if err == nil {
				err = s.userCreated(ctx, tx, u)
			}
		}
		if err != nil {
			return err
		}
		at := parley.NewTime(in.At)
		m := &parley.Message{BrandID: brand.ID, UserID: u.ID, Direction: parley.DirectionInbound,
			Status: parley.StatusDelivered, Body: in.Body, BodyTruncated: truncated, MediaItemUUIDs: []string{}, Type: parley.TypeConversational,
			DateCreated: parley.Time{Time: tx.Now()}, DateSent: &at, DateDelivered: &at}
		fresh, err := tx.InsertInbound(ctx, m, s.provider.Name(), in.ProviderID)
		if err != nil {
			return err
		}
		msg = m
		tx.Answer(m)
		if fresh {
			if err := s.emit(ctx, tx, brand.ID, parley.EventMessageReceived, m); err != nil {
				return err
			}
			// D22: a reply (or opt-out) to the latest campaign sent to them in 72 h.
			if _, err := tx.AttributeInbound(ctx, brand.ID, u.ID, in.At, keyword(in.Body, stopWords)); err != nil {
				return err
			}
		}
		if fresh {
			if err := s.keywordTrigger(ctx, tx, brand.ID, u.ID, in.Body, m.ID); err != nil {
				return err
			}
		}
		var kind string
		switch {
		case keyword(in.Body, stopWords):
			kind, reply = AutoReplyStop, orDefault(replies.Stop, defaultStopReply, brand.Name)
		case keyword(in.Body, startWords):
			kind, reply = AutoReplyStart, orDefault(replies.Start, defaultStartReply, brand.Name)
		case keyword(in.Body, helpWords):
			kind, reply = AutoReplyHelp, orDefault(replies.Help, defaultHelpReply, brand.Name)
		}
		if !fresh {
			// A carrier's repeated callback: the text, its keyword and
			// its answer were handled the first time.
			return nil
		}
		if kind == AutoReplyStop || kind == AutoReplyStart {
			if err := s.setConsent(ctx, tx, brand.ID, u.ID, kind == AutoReplyStart, parley.SourceKeyword, strings.ToUpper(strings.TrimSpace(in.Body)), m.ID); err != nil {
				return err
			}
		}
		if err := tx.TouchConversation(ctx, brand.ID, u.ID, m.DateCreated.Time, kind != ""); err != nil {
			return err
		}
		if kind == "" {
			return nil
		}
		return s.queueAutoReply(ctx, tx, brand.ID, u.ID, kind, reply)
	})
	if err != nil {
		return nil, "", err
	}
	return msg, reply, nil
}

// cleanID reports whether s is text an id or number can be: valid UTF-8
// without control characters.
func cleanID(s string) bool {
	return utf8.ValidString(s) && parley.ControlCharRule(s, false) == ""
}

func orDefault(custom, format, brand string) string {
	if custom != "" {
		return custom
	}
	return strings.Replace(format, "%s", brand, 1)
}

func lastDigits(p string) string {
	if len(p) <= 4 {
		return p
	}
	return p[len(p)-4:]
}
