package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/parleyhq/parley"
)

// The campaign sender's statements (D16, D17). A campaign's messages are
// claimed a batch at a time by setting sending_at: a claimed message is
// out of the sender's work list and out of a cancel's reach (the cancel
// fails only messages with sending_at IS NULL), so nobody else sends or
// cancels it while its batch is with the provider.

// DueCampaigns returns up to limit campaigns whose send_at has come and
// that are still scheduled, earliest first (campaigns_due).
func (db *DB) DueCampaigns(ctx context.Context, now time.Time, limit int) ([]*parley.Campaign, error) {
	rows, err := db.query(ctx, `SELECT `+campaignColumns+` FROM `+campaignsFrom+` WHERE status = 'scheduled' AND send_at <= ?
	ORDER BY send_at LIMIT ?`, micros(now), limit)
	if err != nil {
		return nil, fmt.Errorf("store: due campaigns: %w", err)
	}
	return collect(rows, scanCampaign)
}

// NextCampaignAt returns the earliest send_at of the scheduled campaigns
// (one probe of campaigns_due), ok false when none is scheduled.
func (db *DB) NextCampaignAt(ctx context.Context) (at time.Time, ok bool, err error) {
	var v sql.NullInt64
	if err := db.queryRow(ctx, `SELECT MIN(send_at) FROM campaigns WHERE status = 'scheduled'`).Scan(&v); err != nil {
		return time.Time{}, false, fmt.Errorf("store: next campaign: %w", err)
	}
	if !v.Valid {
		return time.Time{}, false, nil
	}
	return fromMicros(v.Int64), true, nil
}

// FindCampaign is DB.FindCampaign inside tx.
func (tx *Tx) FindCampaign(ctx context.Context, brandID, id int64) (*parley.Campaign, error) {
	c, err := scanCampaign(tx.queryRow(ctx, `SELECT `+campaignColumns+` FROM `+campaignsFrom+` WHERE brand_id = ? AND id = ?`,
		brandID, id).Scan)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	return c, err
}

// CampaignRecipient is what sending one claimed campaign message needs
// about its recipient.
type CampaignRecipient struct {
	MessageID, UserID int64
	To                string
	Deleted           bool
	Consent           *bool
	// ZipZone (location.time_zone) and StateCode, "" when unknown: where
	// the sending window is measured (D17).
	ZipZone, StateCode string
}

// claimUpdate is the statement that claims the rows a SELECT picks:
// `UPDATE messages SET <set> WHERE id IN (<pick>) AND <recheck>`. On
// PostgreSQL the pick is a materialized CTE with FOR UPDATE SKIP LOCKED:
// two senders of one campaign (a rescued job beside a slow one) take
// different rows instead of queueing on the same ones, and the LIMIT is
// applied once (as an IN subquery, PostgreSQL may run it again per row
// and claim more than the batch). SQLite has one writer and needs none.
//
// It returns each claimed message's recipient (claimedRecipient): the
// claim and the read of what sending needs are one statement, which the
// profile of a 100,000-message campaign on SQLite asked for (a second
// query by the claimed ids cost as much as the claim).
func (tx *Tx) claimUpdate(set, pick, recheck string) string {
	if tx.db.engine == "postgres" {
		// A join, where SQLite needs the subqueries of claimedRecipient.
		return `WITH pick AS MATERIALIZED (` + pick + ` FOR UPDATE SKIP LOCKED),
	claimed AS (UPDATE messages SET ` + set + ` FROM pick WHERE messages.id = pick.id AND ` + recheck + `
		RETURNING messages.id, messages.user_id)
	SELECT c.id, c.user_id, u.phone_number, u.is_deleted, u.messaging_consent, COALESCE(u.time_zone, ''),
	COALESCE(u.state_code, '') FROM claimed c JOIN users u ON u.id = c.user_id`
	}
	return `UPDATE messages SET ` + set + ` WHERE id IN (` + pick + `) AND ` + recheck + ` RETURNING ` + claimedRecipient
}

// claimedRecipient is what a claim returns of each message: scalar
// subqueries, as SQLite's RETURNING names only the updated table.
const claimedRecipient = `messages.id, messages.user_id,
	(SELECT u.phone_number FROM users u WHERE u.id = messages.user_id),
	(SELECT u.is_deleted FROM users u WHERE u.id = messages.user_id),
	(SELECT u.messaging_consent FROM users u WHERE u.id = messages.user_id),
	(SELECT COALESCE(u.time_zone, '') FROM users u WHERE u.id = messages.user_id),
	(SELECT COALESCE(u.state_code, '') FROM users u WHERE u.id = messages.user_id)`

// collectRecipients reads the rows of claimedRecipient, in id order.
func collectRecipients(rows *sql.Rows) ([]CampaignRecipient, error) {
	out, err := scanRecipients(rows)
	sortRecipients(out)
	return out, err
}

func sortRecipients(rs []CampaignRecipient) {
	slices.SortFunc(rs, func(a, b CampaignRecipient) int { return cmp.Compare(a.MessageID, b.MessageID) })
}

// scanRecipients reads the rows of claimedRecipient, in their order.
func scanRecipients(rows *sql.Rows) ([]CampaignRecipient, error) {
	defer rows.Close()
	var out []CampaignRecipient
	for rows.Next() {
		var r CampaignRecipient
		var consent sql.NullBool
		if err := rows.Scan(&r.MessageID, &r.UserID, &r.To, &r.Deleted, &consent, &r.ZipZone, &r.StateCode); err != nil {
			return nil, err
		}
		r.Consent = nullBool(consent)
		out = append(out, r)
	}
	return out, rows.Err()
}

// ClaimCampaignMessages claims up to limit of the campaign's queued,
// unclaimed messages that are due (not held past now), in the order of
// messages_campaign_queue, by setting sending_at to now — only while the
// campaign is sending — and returns their recipients, in id order.
// provider, when not empty, is recorded as MarkSending does (a provider
// that is not idempotent). ahead, when not nil (SQLite), are the messages to
// claim, read before the transaction.
func (tx *Tx) ClaimCampaignMessages(ctx context.Context, brandID, campaignID int64, limit int, provider string, ahead *Ahead) ([]CampaignRecipient, error) {
	return tx.claimQueued(ctx, campaignSource, brandID, campaignID, limit, provider, ahead)
}

// ClaimFlowMessages is ClaimCampaignMessages for the flow's queued
// messages (messages_flow_queue, D21): a flow is no gate of its own, as
// its messages were written by steps that ran.
func (tx *Tx) ClaimFlowMessages(ctx context.Context, brandID, flowID int64, limit int, provider string, ahead *Ahead) ([]CampaignRecipient, error) {
	return tx.claimQueued(ctx, flowSource, brandID, flowID, limit, provider, ahead)
}

// queuedSource is a source of queued messages: the column that names it
// (campaign_id, flow_id) and the further condition of a claim (with one
// argument, the source's id), "" for none.
type queuedSource struct{ column, guard string }

var (
	campaignSource = queuedSource{"campaign_id", `AND EXISTS (SELECT 1 FROM campaigns c WHERE c.id = ? AND c.status = 'sending')`}
	flowSource     = queuedSource{"flow_id", ""}
)

// pick is the SELECT of up to limit ids of the source's due, unclaimed
// queued messages in the order of its queue index, and its arguments.
func (src queuedSource) pick(brandID, id int64, now int64, limit int) (string, []any) {
	args := []any{id, now, brandID}
	if src.guard != "" {
		args = append(args, id)
	}
	return `SELECT id FROM messages WHERE ` + src.column + ` = ? AND status = 'queued' AND COALESCE(scheduled_at, 0) <= ?
		AND sending_at IS NULL AND brand_id = ? ` + src.guard + `
		ORDER BY COALESCE(scheduled_at, 0), id LIMIT ?`, append(args, limit)
}

// claimQueued claims the due messages of a source of queued messages.
func (tx *Tx) claimQueued(ctx context.Context, src queuedSource, brandID, id int64, limit int, provider string, ahead *Ahead) ([]CampaignRecipient, error) {
	now := micros(tx.now)
	const set = `sending_at = ?, attempts = attempts + 1, provider = COALESCE(?, provider)`
	setArgs := []any{now, nullIfEmpty(provider)}
	if ahead != nil {
		return tx.claimAhead(ctx, src, brandID, id, limit, set, setArgs, ahead)
	}
	pick, pickArgs := src.pick(brandID, id, now, limit)
	q := tx.claimUpdate(set, pick, `messages.status = 'queued' AND messages.sending_at IS NULL`)
	rows, err := tx.query(ctx, q, tx.claimArgs(setArgs, pickArgs)...)
	if err != nil {
		return nil, fmt.Errorf("store: claim queued messages: %w", err)
	}
	return collectRecipients(rows)
}

// ClaimStaleCampaignMessages claims again up to limit of the campaign's
// messages that a sender claimed at or before staleBefore and left queued: its
// process died between the claim and the write of the outcome. It sets
// sending_at to now and returns their recipients, whatever the campaign's status
// (a canceled campaign's claimed messages may have reached the provider).
func (tx *Tx) ClaimStaleCampaignMessages(ctx context.Context, brandID, campaignID int64, staleBefore time.Time, limit int) ([]CampaignRecipient, error) {
	return tx.claimStale(ctx, "campaign_id", brandID, campaignID, staleBefore, limit)
}

// ClaimStaleFlowMessages is ClaimStaleCampaignMessages for a flow's.
func (tx *Tx) ClaimStaleFlowMessages(ctx context.Context, brandID, flowID int64, staleBefore time.Time, limit int) ([]CampaignRecipient, error) {
	return tx.claimStale(ctx, "flow_id", brandID, flowID, staleBefore, limit)
}

func (tx *Tx) claimStale(ctx context.Context, column string, brandID, id int64, staleBefore time.Time, limit int) ([]CampaignRecipient, error) {
	q := tx.claimUpdate(`sending_at = ?, attempts = attempts + 1`,
		`SELECT id FROM messages WHERE `+column+` = ? AND status = 'queued' AND sending_at <= ? AND brand_id = ?
		ORDER BY COALESCE(scheduled_at, 0), id LIMIT ?`,
		`messages.status = 'queued' AND messages.sending_at IS NOT NULL`)
	rows, err := tx.query(ctx, q, tx.claimArgs([]any{micros(tx.now)},
		[]any{id, micros(staleBefore), brandID, limit})...)
	if err != nil {
		return nil, fmt.Errorf("store: claim stale messages: %w", err)
	}
	return collectRecipients(rows)
}

// claimArgs orders the arguments of claimUpdate's statement: the pick's
// first on PostgreSQL (its CTE comes first), the SET's first on SQLite.
func (tx *Tx) claimArgs(set, pick []any) []any {
	if tx.db.engine == "postgres" {
		return append(append([]any{}, pick...), set...)
	}
	return append(append([]any{}, set...), pick...)
}

func collectIDs(rows *sql.Rows) ([]int64, error) {
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// inList returns "(?, ?, …)" for n values and the values as arguments.
func inList(ids []int64) (string, []any) {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	return `(?` + strings.Repeat(", ?", len(ids)-1) + `)`, args
}

// HoldCampaignMessages puts claimed messages back in the work list, held
// until until (D17's next opening): scheduled_at records it, the claim
// and its attempt are undone.
func (tx *Tx) HoldCampaignMessages(ctx context.Context, brandID int64, ids []int64, until time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	in, args := inList(ids)
	_, err := tx.exec(ctx, `UPDATE messages SET scheduled_at = ?, sending_at = NULL, attempts = attempts - 1, provider = NULL
	WHERE +brand_id = ? AND status = 'queued' AND id IN `+in, append([]any{micros(until), brandID}, args...)...)
	if err != nil {
		return fmt.Errorf("store: hold campaign messages: %w", err)
	}
	return nil
}

// LockCampaignStatus returns the brand's campaign's status, locking its
// row until tx ends: a cancel (which updates the row first) then either
// committed before, and is seen, or waits for tx, and its failing of the
// unclaimed messages sees what tx released. ErrNotFound when there is none.
func (tx *Tx) LockCampaignStatus(ctx context.Context, brandID, id int64) (string, error) {
	var status string
	err := tx.queryRow(ctx, `UPDATE campaigns SET status = status WHERE brand_id = ? AND id = ? RETURNING status`,
		brandID, id).Scan(&status)
	if errors.Is(err, sql.ErrNoRows) {
		return "", ErrNotFound
	} else if err != nil {
		return "", fmt.Errorf("store: lock campaign: %w", err)
	}
	return status, nil
}

// ReleaseCampaignMessages undoes the claim and the hand-over of messages
// the provider did not take (a temporary error), so a later batch sends
// them again.
func (tx *Tx) ReleaseCampaignMessages(ctx context.Context, brandID int64, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	in, args := inList(ids)
	_, err := tx.exec(ctx, `UPDATE messages SET sending_at = NULL, handed_at = NULL, provider = NULL
	WHERE +brand_id = ? AND status = 'queued' AND id IN `+in, append([]any{brandID}, args...)...)
	if err != nil {
		return fmt.Errorf("store: release campaign messages: %w", err)
	}
	return nil
}

// MessageAttempts returns the attempts count of the brand's messages.
func (tx *Tx) MessageAttempts(ctx context.Context, brandID int64, ids []int64) (map[int64]int, error) {
	out := map[int64]int{}
	if len(ids) == 0 {
		return out, nil
	}
	in, args := inList(ids)
	rows, err := tx.query(ctx, `SELECT id, attempts FROM messages WHERE +brand_id = ? AND id IN `+in, append([]any{brandID}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("store: message attempts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return nil, err
		}
		out[id] = n
	}
	return out, rows.Err()
}

// Sent is a message the provider took, with the provider's id for it.
type Sent struct {
	MessageID  int64
	ProviderID string
}

// MarkSentMany moves the brand's queued messages in sent to sent at the
// transaction's time, recording the provider and each provider id, in
// one statement, and returns the ids it moved (a message no longer
// queued is left alone, as TransitionMessage does).
func (tx *Tx) MarkSentMany(ctx context.Context, brandID int64, provider string, sent []Sent) ([]int64, error) {
	if len(sent) == 0 {
		return nil, nil
	}
	var q strings.Builder
	// VALUES columns are column1, column2 on both engines; the casts type
	// PostgreSQL's parameters, which it would otherwise read as text.
	// The unary + keeps SQLite from walking the brand's index of messages
	// and probing v for each (it did, once the campaign's messages were
	// there: every batch read all the brand's messages); it does nothing
	// on PostgreSQL. The id list besides the join gives PostgreSQL the
	// primary key's index to start from, whatever it guesses of the VALUES.
	q.WriteString(`UPDATE messages SET status = 'sent', error_code = NULL, error_message = NULL, date_sent = ?,
	provider = ?, provider_id = v.column2
	FROM (VALUES `)
	args := make([]any, 0, 3+2*len(sent))
	args = append(args, micros(tx.now), provider)
	for i, s := range sent {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString(`(CAST(? AS BIGINT), CAST(? AS TEXT))`)
		args = append(args, s.MessageID, s.ProviderID)
	}
	in, idArgs := inList(ids(sent))
	q.WriteString(`) AS v WHERE messages.id = v.column1 AND messages.id IN ` + in + ` AND +messages.brand_id = ?
	AND messages.status = 'queued' RETURNING messages.id, COALESCE(messages.campaign_id, 0)`)
	args = append(append(args, idArgs...), brandID)
	counts, err := tx.countsByWriter(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := tx.query(ctx, q.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("store: mark sent: %w", err)
	}
	defer rows.Close()
	var moved []int64
	moves := map[countMove]int64{}
	for rows.Next() {
		var id, campaign int64
		if err := rows.Scan(&id, &campaign); err != nil {
			return nil, fmt.Errorf("store: mark sent: %w", err)
		}
		moved = append(moved, id)
		if campaign != 0 {
			moves[countMove{campaign: campaign, from: parley.StatusQueued, to: parley.StatusSent}]++
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: mark sent: %w", err)
	}
	if counts {
		if err := tx.addCounts(ctx, moves); err != nil {
			return nil, err
		}
	}
	return moved, nil
}

func ids(sent []Sent) []int64 {
	out := make([]int64, len(sent))
	for i, s := range sent {
		out[i] = s.MessageID
	}
	return out
}

// TransitionMany is TransitionMessage for many of the brand's messages
// with the same change, in one statement; it returns the ids it moved.
// t.ProviderID and t.Provider are not recorded.
func (tx *Tx) TransitionMany(ctx context.Context, brandID int64, ids []int64, t Transition) ([]int64, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	from := parley.StatusFrom(t.Status)
	if len(from) == 0 {
		return nil, fmt.Errorf("store: no transition to %q", t.Status)
	}
	in, idArgs := inList(ids)
	where := ` WHERE +brand_id = ? AND id IN ` + in + ` AND status IN (?` + strings.Repeat(", ?", len(from)-1) + `)`
	whereArgs := append([]any{brandID}, idArgs...)
	for _, f := range from {
		whereArgs = append(whereArgs, f)
	}
	counts, err := tx.countsByWriter(ctx)
	if err != nil {
		return nil, err
	}
	var moves map[countMove]int64
	unsent := true // some of the messages may have no date_sent
	if counts {
		if moves, unsent, err = tx.movesAhead(ctx, where, whereArgs, countColumn(t.Status, deref(t.ErrorCode))); err != nil {
			return nil, err
		}
	}
	args := []any{t.Status, toNullString(t.ErrorCode), toNullString(t.ErrorMessage)}
	at := micros(t.At)
	set := `status = ?, error_code = ?, error_message = ?`
	switch {
	case t.Status == parley.StatusSent:
		set += `, date_sent = ?`
		args = append(args, at)
	case t.Status == parley.StatusDelivered && unsent:
		set += `, date_sent = COALESCE(date_sent, ?), date_delivered = ?`
		args = append(args, at, at)
	case t.Status == parley.StatusDelivered:
		// Every one was sent (the reports of a batch): date_sent stays out
		// of the SET, so SQLite leaves messages_user_campaign_sent's
		// entries alone (it rewrites those of every column set).
		set += `, date_delivered = ?`
		args = append(args, at)
	}
	rows, err := tx.query(ctx, `UPDATE messages SET `+set+where+` RETURNING id`, append(args, whereArgs...)...)
	if err != nil {
		return nil, fmt.Errorf("store: transition messages: %w", err)
	}
	moved, err := collectIDs(rows)
	if err != nil || !counts {
		return moved, err
	}
	return moved, tx.addCounts(ctx, moves)
}

// movesAhead reads what an UPDATE of messages with where will move, as
// TransitionMany counts it into the column to: its RETURNING sees only
// the new rows, and SQLite's one writer keeps the read and the write in
// step. unsent says whether any of the messages has no date_sent.
func (tx *Tx) movesAhead(ctx context.Context, where string, whereArgs []any, to string) (map[countMove]int64, bool, error) {
	rows, err := tx.query(ctx, `SELECT COALESCE(campaign_id, 0), status, COALESCE(error_code, ''), date_sent IS NULL, count(*)
	FROM messages`+where+` GROUP BY campaign_id, status, error_code, date_sent IS NULL`, whereArgs...)
	if err != nil {
		return nil, false, fmt.Errorf("store: transition messages: %w", err)
	}
	defer rows.Close()
	moves := map[countMove]int64{}
	unsent := false
	for rows.Next() {
		var campaign, n int64
		var status, code string
		var noDate bool
		if err := rows.Scan(&campaign, &status, &code, &noDate, &n); err != nil {
			return nil, false, fmt.Errorf("store: transition messages: %w", err)
		}
		unsent = unsent || noDate
		if campaign != 0 {
			moves[countMove{campaign: campaign, from: countColumn(status, code), to: to}] += n
		}
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("store: transition messages: %w", err)
	}
	return moves, unsent, nil
}

// FindMessages returns the brand's messages ids, in id order.
func (tx *Tx) FindMessages(ctx context.Context, brandID int64, ids []int64) ([]*parley.Message, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	in, args := inList(ids)
	rows, err := tx.query(ctx, `SELECT `+messageColumns+` FROM messages WHERE +brand_id = ? AND id IN `+in+` ORDER BY id`,
		append([]any{brandID}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("store: find messages: %w", err)
	}
	return collect(rows, scanMessage)
}

// Reported is an outbound message a provider's status report names.
//
// Statements that name messages by a list of ids write the brand test
// as +brand_id: it keeps the planners (PostgreSQL's with statistics taken
// before a campaign's rows existed, measured) from reading the brand's
// index and filtering the list, which grows with every batch, instead of
// looking the ids up by primary key.
type Reported struct {
	ID, BrandID, UserID int64
	Status              string
	Provider            string // "" while no send is recorded
	ProviderID          string
}

// ReportedByIDs returns the outbound messages ids, keyed by id: the
// messages of reports that carry Parley's id (the simulator's). The
// primary key finds them whatever the planner thinks of the table.
func (db *DB) ReportedByIDs(ctx context.Context, ids []int64) (map[int64]*Reported, error) {
	out := map[int64]*Reported{}
	if len(ids) == 0 {
		return out, nil
	}
	in, args := inList(ids)
	rows, err := db.query(ctx, reportedColumns+` WHERE id IN `+in+` AND direction = 'outbound'`, args...)
	if err != nil {
		return nil, fmt.Errorf("store: find reported: %w", err)
	}
	rs, err := collectReported(rows)
	for _, r := range rs {
		out[r.ID] = r
	}
	return out, err
}

// ReportedByProviderIDs returns the messages of provider named by
// providerIDs, keyed by provider id.
func (db *DB) ReportedByProviderIDs(ctx context.Context, provider string, providerIDs []string) (map[string]*Reported, error) {
	out := map[string]*Reported{}
	if len(providerIDs) == 0 {
		return out, nil
	}
	args := make([]any, 0, 1+len(providerIDs))
	args = append(args, provider)
	for _, p := range providerIDs {
		args = append(args, p)
	}
	rows, err := db.query(ctx, reportedColumns+` WHERE provider = ? AND provider_id IN (?`+strings.Repeat(", ?", len(providerIDs)-1)+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("store: find reported: %w", err)
	}
	rs, err := collectReported(rows)
	for _, r := range rs {
		out[r.ProviderID] = r
	}
	return out, err
}

const reportedColumns = `SELECT id, brand_id, user_id, status, COALESCE(provider, ''), COALESCE(provider_id, '') FROM messages`

func collectReported(rows *sql.Rows) ([]*Reported, error) {
	defer rows.Close()
	var out []*Reported
	for rows.Next() {
		var r Reported
		if err := rows.Scan(&r.ID, &r.BrandID, &r.UserID, &r.Status, &r.Provider, &r.ProviderID); err != nil {
			return nil, fmt.Errorf("store: find reported: %w", err)
		}
		out = append(out, &r)
	}
	return out, rows.Err()
}

// CampaignQueue is what is left in a campaign's work list.
type CampaignQueue struct {
	Queued int64 // messages still queued, claimed or not
	// Claimed of them are with a sender; OldestClaim is the earliest claim.
	Claimed     int64
	OldestClaim time.Time
	// NextHeld is the earliest scheduled_at of the unclaimed ones held for
	// their window (zero when none).
	NextHeld time.Time
	// Resolving: the audience is still being written (resolve_cursor), so
	// more messages may come although none is queued now.
	Resolving bool
}

// CampaignQueueState reads the campaign's work list (messages_campaign_queue).
func (tx *Tx) CampaignQueueState(ctx context.Context, brandID, campaignID int64) (CampaignQueue, error) {
	return tx.queueState(ctx, "campaign_id", brandID, campaignID,
		`(SELECT count(*) FROM campaigns WHERE id = ? AND resolve_cursor IS NOT NULL)`)
}

// FlowQueueState reads the flow's work list (messages_flow_queue); a
// flow is never resolving.
func (tx *Tx) FlowQueueState(ctx context.Context, brandID, flowID int64) (CampaignQueue, error) {
	return tx.queueState(ctx, "flow_id", brandID, flowID, `(SELECT 0 * CAST(? AS BIGINT))`)
}

func (tx *Tx) queueState(ctx context.Context, column string, brandID, id int64, resolvingQ string) (CampaignQueue, error) {
	var q CampaignQueue
	var oldest, held sql.NullInt64
	var resolving int64
	err := tx.queryRow(ctx, `SELECT count(*), coalesce(sum(CASE WHEN sending_at IS NULL THEN 0 ELSE 1 END), 0),
	min(sending_at), min(CASE WHEN sending_at IS NULL THEN scheduled_at END), `+resolvingQ+`
	FROM messages WHERE `+column+` = ? AND status = 'queued' AND brand_id = ?`, id, id, brandID).Scan(
		&q.Queued, &q.Claimed, &oldest, &held, &resolving)
	if err != nil {
		return q, fmt.Errorf("store: queue state: %w", err)
	}
	if oldest.Valid {
		q.OldestClaim = fromMicros(oldest.Int64)
	}
	if held.Valid {
		q.NextHeld = fromMicros(held.Int64)
	}
	q.Resolving = resolving > 0
	return q, nil
}

// CompleteCampaign moves the brand's sending campaign to completed at the
// transaction's time when none of its messages is queued any more and its
// audience is written whole (resolve_cursor NULL); false when it is not
// sending, is still being resolved or has queued messages. Guarded, so the
// campaign completes once however many senders try.
func (tx *Tx) CompleteCampaign(ctx context.Context, brandID, campaignID int64) (bool, error) {
	res, err := tx.exec(ctx, `UPDATE campaigns SET status = 'completed', completed_at = ?
	WHERE brand_id = ? AND id = ? AND status = 'sending' AND resolve_cursor IS NULL
	AND NOT EXISTS (SELECT 1 FROM messages WHERE campaign_id = ? AND status = 'queued')`,
		micros(tx.now), brandID, campaignID, campaignID)
	if err != nil {
		return false, fmt.Errorf("store: complete campaign: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// AnalyzeMessages refreshes PostgreSQL's statistics of messages after a
// campaign's resolution wrote many rows at once. Until autovacuum comes
// round (a minute or more; never where it is off), the planner takes the
// campaign's 100,000 queued messages for the handful it last counted and
// plans each batch's statements as nested loops over the whole table:
// measured, a batch's write of its sends took seconds instead of
// milliseconds. SQLite's plans did not need it.
func (db *DB) AnalyzeMessages(ctx context.Context) error {
	if db.engine != "postgres" {
		return nil
	}
	if _, err := db.write.ExecContext(ctx, `ANALYZE messages`); err != nil {
		return fmt.Errorf("store: analyze messages: %w", err)
	}
	return nil
}

// RelaxCommit lets PostgreSQL commit tx without waiting for the disk
// (synchronous_commit off, for this transaction only); SQLite ignores it.
// Only for writes whose loss in a crash is repaired by what follows:
// a campaign batch's claim and sent write for an idempotent provider (a
// lost one leaves the messages to be claimed and sent again, which that
// provider absorbs). The next synchronous commit — the simulator's
// ledger insert of the next batch — writes the WAL up to itself, so the
// relaxed commits before it are on disk then too.
func (tx *Tx) RelaxCommit(ctx context.Context) error {
	if tx.db.engine != "postgres" {
		return nil
	}
	if _, err := tx.exec(ctx, `SET LOCAL synchronous_commit TO OFF`); err != nil {
		return fmt.Errorf("store: relax commit: %w", err)
	}
	return nil
}

// RecipientContact is what a campaign body's placeholders are filled in
// with for one recipient (D21): names ("" when unknown) and custom data
// (the JSON object, "" when none).
type RecipientContact struct {
	FirstName, LastName, CustomData string
}

// RecipientContacts reads the names and custom data of the brand's users,
// by id: read only for a body with placeholders, so a campaign without
// them claims as cheaply as before.
func (tx *Tx) RecipientContacts(ctx context.Context, brandID int64, userIDs []int64) (map[int64]RecipientContact, error) {
	out := make(map[int64]RecipientContact, len(userIDs))
	if len(userIDs) == 0 {
		return out, nil
	}
	custom := "COALESCE(custom_data, '')"
	if tx.db.engine == "postgres" {
		custom = "COALESCE(custom_data::text, '')"
	}
	in, args := inList(userIDs)
	rows, err := tx.query(ctx, `SELECT id, COALESCE(first_name, ''), COALESCE(last_name, ''), `+custom+`
	FROM users WHERE brand_id = ? AND id IN `+in, append([]any{brandID}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("store: recipient contacts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var c RecipientContact
		if err := rows.Scan(&id, &c.FirstName, &c.LastName, &c.CustomData); err != nil {
			return nil, fmt.Errorf("store: recipient contacts: %w", err)
		}
		out[id] = c
	}
	return out, rows.Err()
}

// SetMessageBodies stores each message's body as rendered for its
// recipient (D21: the campaign's placeholders filled in), so the message
// reads, counts its segments (num_segments) and is sent as it was sent.
func (tx *Tx) SetMessageBodies(ctx context.Context, brandID int64, bodies map[int64]string) error {
	for id, body := range bodies {
		if _, err := tx.exec(ctx, `UPDATE messages SET body = ? WHERE +brand_id = ? AND id = ?`, body, brandID, id); err != nil {
			return fmt.Errorf("store: set message body: %w", err)
		}
	}
	return nil
}
