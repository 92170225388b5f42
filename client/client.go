// Package client is the Go SDK of Parley's v1 API. Every call is signed
// with the credential's secret as the API requires (see package signing).
//
//	c := client.New("http://127.0.0.1:8080", username, secret)
//	u, err := c.CreateUser(ctx, parley.UserCreate{PhoneNumber: parley.Some("+14155552671")})
//	var apiErr *client.Error
//	if errors.As(err, &apiErr) && apiErr.Type == parley.EDuplicate { … }
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/signing"
)

// Client calls one Parley server with one credential. It is safe for
// concurrent use.
type Client struct {
	base     string // scheme://host[:port], no trailing slash
	username string
	secret   string
	hc       *http.Client
	now      func() time.Time
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sets the HTTP client (default: one with a 30 s timeout).
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithClock sets the clock that dates signatures (for tests).
func WithClock(now func() time.Time) Option { return func(c *Client) { c.now = now } }

// New returns a client for the server at baseURL ("http://127.0.0.1:8080";
// a trailing /api/v1 is accepted too).
func New(baseURL, username, secret string, opts ...Option) *Client {
	base := strings.TrimRight(baseURL, "/")
	base = strings.TrimSuffix(base, "/api/v1")
	c := &Client{base: base, username: username, secret: secret,
		hc: &http.Client{Timeout: 30 * time.Second}, now: time.Now}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Error is an error answer of the API.
type Error struct {
	StatusCode int
	Type       string // the envelope's type, e.g. parley.EUserNotFound
	Msg        string
	Field      string
	RequestID  string
}

func (e *Error) Error() string {
	return fmt.Sprintf("parley: %d %s: %s", e.StatusCode, e.Type, e.Msg)
}

type idempotencyKey struct{}

// WithIdempotencyKey returns a context under which a POST carries
// Idempotency-Key: key (D13). Retrying the same call with the same key —
// after a timeout, say — runs it at most once: a repeat gets the first
// response back. Wait a second before a retry: the signature's x-date
// must differ, or the server rejects the retry as a replay (D2).
func WithIdempotencyKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, idempotencyKey{}, key)
}

// Response is a raw API answer.
type Response struct {
	StatusCode int
	Header     http.Header
	Body       []byte
}

// Do sends a signed request for path (starting with "/api/v1" or not; it is
// added when missing) and returns the answer whatever its status. body may be
// nil; contentType is used when body is non-nil.
func (c *Client) Do(ctx context.Context, method, path string, body []byte, contentType string) (*Response, error) {
	resp, err := c.send(ctx, method, path, body, contentType)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return &Response{StatusCode: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

// send sends a signed request and returns the answer unread.
func (c *Client) send(ctx context.Context, method, path string, body []byte, contentType string) (*http.Response, error) {
	if !strings.HasPrefix(path, "/api/v1") && !strings.HasPrefix(path, "/media/") {
		path = "/api/v1" + path
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if body == nil {
		req.Body, req.ContentLength, req.GetBody = http.NoBody, 0, nil
	} else if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if key, ok := ctx.Value(idempotencyKey{}).(string); ok {
		req.Header.Set("Idempotency-Key", key)
	}
	signing.SignRequest(req, c.username, c.secret, body, c.now())
	return c.hc.Do(req)
}

// call sends in as JSON (when non-nil) and decodes a 2xx answer into out.
func (c *Client) call(ctx context.Context, method, path string, in, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return err
		}
	}
	resp, err := c.Do(ctx, method, path, body, "application/json")
	if err != nil {
		return err
	}
	return resp.decode(out)
}

// do is call for a typed answer: nil with the error, never a half-filled value.
func do[T any](ctx context.Context, c *Client, method, path string, in any) (*T, error) {
	var out T
	if err := c.call(ctx, method, path, in, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (r *Response) decode(out any) error {
	if r.StatusCode >= 300 {
		return r.Err()
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(r.Body, out)
}

// Err returns the *Error of a non-2xx answer, nil for a 2xx one.
func (r *Response) Err() error {
	if r.StatusCode < 300 {
		return nil
	}
	var env struct {
		Detail struct {
			Type  string `json:"type"`
			Msg   string `json:"msg"`
			Field string `json:"field"`
		} `json:"detail"`
	}
	e := &Error{StatusCode: r.StatusCode, RequestID: r.Header.Get("X-Request-Id")}
	if json.Unmarshal(r.Body, &env) == nil && env.Detail.Type != "" {
		e.Type, e.Msg, e.Field = env.Detail.Type, env.Detail.Msg, env.Detail.Field
	} else {
		e.Type, e.Msg = parley.EInternal, strings.TrimSpace(string(r.Body))
	}
	return e
}

// ExportUsers streams the brand's users to w as CSV in the import format
// (GET /users/export; docs/import.md) and returns how many bytes it wrote.
// The file is written as it arrives, so memory stays flat for any brand;
// the HTTP client's timeout (30 s by default, WithHTTPClient) bounds the
// whole transfer, so give a large export a longer one or none, and bound
// it with ctx. An answer cut short is an error, never a short file.
func (c *Client) ExportUsers(ctx context.Context, w io.Writer) (int64, error) {
	resp, err := c.send(ctx, "GET", "/users/export", nil, "")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if err != nil {
			return 0, err
		}
		if err := (&Response{StatusCode: resp.StatusCode, Header: resp.Header, Body: b}).Err(); err != nil {
			return 0, err
		}
		return 0, fmt.Errorf("parley: export answered %d, want 200", resp.StatusCode)
	}
	return io.Copy(w, resp.Body)
}

// CreateUser creates a user (POST /users).
func (c *Client) CreateUser(ctx context.Context, in parley.UserCreate) (*parley.User, error) {
	return do[parley.User](ctx, c, "POST", "/users", in)
}

// GetUser reads a user by id (GET /users/{id}).
func (c *Client) GetUser(ctx context.Context, id int64) (*parley.User, error) {
	return do[parley.User](ctx, c, "GET", "/users/"+strconv.FormatInt(id, 10), nil)
}

// FindUserByPhone reads a user by E.164 number (GET /users?phone_number=).
func (c *Client) FindUserByPhone(ctx context.Context, phone string) (*parley.User, error) {
	return do[parley.User](ctx, c, "GET", "/users?phone_number="+url.QueryEscape(phone), nil)
}

// UpdateUser changes the members set in in (POST /users/{id}).
func (c *Client) UpdateUser(ctx context.Context, id int64, in parley.UserUpdate) (*parley.User, error) {
	return do[parley.User](ctx, c, "POST", "/users/"+strconv.FormatInt(id, 10), in)
}

// DeleteUser deletes a user and returns it (DELETE /users/{id}).
func (c *Client) DeleteUser(ctx context.Context, id int64) (*parley.User, error) {
	return do[parley.User](ctx, c, "DELETE", "/users/"+strconv.FormatInt(id, 10), nil)
}

// SendMessage queues a message (POST /messages).
func (c *Client) SendMessage(ctx context.Context, in parley.MessageCreate) (*parley.Message, error) {
	return do[parley.Message](ctx, c, "POST", "/messages", in)
}

// SimulateInbound makes the sim provider deliver a text from in.From to
// the brand's number, as a phone would (POST /simulator/inbound, D12), and
// returns the stored inbound message. Servers with another provider answer
// 404.
func (c *Client) SimulateInbound(ctx context.Context, in parley.SimulatedInbound) (*parley.Message, error) {
	return do[parley.Message](ctx, c, "POST", "/simulator/inbound", in)
}

// GetMessage reads a message (GET /messages/{id}).
func (c *Client) GetMessage(ctx context.Context, id int64) (*parley.Message, error) {
	return do[parley.Message](ctx, c, "GET", "/messages/"+strconv.FormatInt(id, 10), nil)
}

// ListMessages reads one page of messages, newest first, and the cursor of
// the next page ("" after the last).
func (c *Client) ListMessages(ctx context.Context, f parley.MessageFilter) ([]*parley.Message, string, error) {
	q := url.Values{}
	if f.UserID != 0 {
		q.Set("user_id", strconv.FormatInt(f.UserID, 10))
	}
	if f.CampaignID != 0 {
		q.Set("campaign_id", strconv.FormatInt(f.CampaignID, 10))
	}
	return getPage[*parley.Message](ctx, c, "/messages", q, f.Limit, f.Cursor)
}

// getPage reads one page of a list (D8) at path with the query q, limit
// and cursor added, and returns it with the next page's cursor ("" after
// the last).
func getPage[T any](ctx context.Context, c *Client, path string, q url.Values, limit int, cursor string) ([]T, string, error) {
	if limit != 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var page struct {
		Data       []T     `json:"data"`
		NextCursor *string `json:"next_cursor"`
	}
	if err := c.call(ctx, "GET", path, nil, &page); err != nil {
		return nil, "", err
	}
	next := ""
	if page.NextCursor != nil {
		next = *page.NextCursor
	}
	return page.Data, next, nil
}

// UserHistory reads one page of a user's history (GET
// /users/{id}/history), oldest first, and the cursor of the next page (""
// after the last).
func (c *Client) UserHistory(ctx context.Context, userID int64, f parley.HistoryFilter) ([]*parley.HistoryEntry, string, error) {
	q := url.Values{}
	if f.Field != "" {
		q.Set("field", f.Field)
	}
	return getPage[*parley.HistoryEntry](ctx, c, "/users/"+strconv.FormatInt(userID, 10)+"/history", q, f.Limit, f.Cursor)
}

// UploadFile uploads media (POST /files). The body is built in memory,
// because its digest is signed before it is sent.
func (c *Client) UploadFile(ctx context.Context, fileName string, content io.Reader) (*parley.File, error) {
	body, contentType, err := MultipartFile(fileName, content)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(ctx, "POST", "/files", body, contentType)
	if err != nil {
		return nil, err
	}
	var f parley.File
	if err := resp.decode(&f); err != nil {
		return nil, err
	}
	return &f, nil
}

// MultipartFile builds a multipart/form-data body with one part named
// "file", and returns it with its Content-Type.
func MultipartFile(fileName string, content io.Reader) ([]byte, string, error) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	part, err := mw.CreateFormFile("file", fileName)
	if err != nil {
		return nil, "", err
	}
	if _, err := io.Copy(part, content); err != nil {
		return nil, "", err
	}
	if err := mw.Close(); err != nil {
		return nil, "", err
	}
	return buf.Bytes(), mw.FormDataContentType(), nil
}

// GetFile reads a file's metadata (GET /files/{id}).
func (c *Client) GetFile(ctx context.Context, id string) (*parley.File, error) {
	return do[parley.File](ctx, c, "GET", "/files/"+url.PathEscape(id), nil)
}

// GetBrand reads the brand of the credential (GET /brand).
func (c *Client) GetBrand(ctx context.Context) (*parley.Brand, error) {
	return do[parley.Brand](ctx, c, "GET", "/brand", nil)
}

// ListSegments reads the brand's active segments (GET /segments).
func (c *Client) ListSegments(ctx context.Context) ([]*parley.Segment, error) {
	l, err := do[[]*parley.Segment](ctx, c, "GET", "/segments", nil)
	if err != nil {
		return nil, err
	}
	return *l, nil
}

// ListCustomFields reads the brand's custom data fields (GET /custom_data).
func (c *Client) ListCustomFields(ctx context.Context) ([]*parley.CustomField, error) {
	l, err := do[[]*parley.CustomField](ctx, c, "GET", "/custom_data", nil)
	if err != nil {
		return nil, err
	}
	return *l, nil
}

// CreateSegment creates a segment (POST /segments, D15).
func (c *Client) CreateSegment(ctx context.Context, in parley.SegmentCreate) (*parley.Segment, error) {
	return do[parley.Segment](ctx, c, "POST", "/segments", in)
}

// GetSegment reads a segment, archived or not (GET /segments/{id}).
func (c *Client) GetSegment(ctx context.Context, id int64) (*parley.Segment, error) {
	return do[parley.Segment](ctx, c, "GET", "/segments/"+strconv.FormatInt(id, 10), nil)
}

// UpdateSegment changes the members set in in (POST /segments/{id}).
func (c *Client) UpdateSegment(ctx context.Context, id int64, in parley.SegmentUpdate) (*parley.Segment, error) {
	return do[parley.Segment](ctx, c, "POST", "/segments/"+strconv.FormatInt(id, 10), in)
}

// ArchiveSegment archives a segment and returns it (DELETE /segments/{id}).
func (c *Client) ArchiveSegment(ctx context.Context, id int64) (*parley.Segment, error) {
	return do[parley.Segment](ctx, c, "DELETE", "/segments/"+strconv.FormatInt(id, 10), nil)
}

// SegmentUsers reads one page of a segment's users by id (GET
// /segments/{id}/users) and the cursor of the next page ("" after the
// last). limit 0 means the server's default.
func (c *Client) SegmentUsers(ctx context.Context, id int64, limit int, cursor string) ([]*parley.User, string, error) {
	return getPage[*parley.User](ctx, c, "/segments/"+strconv.FormatInt(id, 10)+"/users", url.Values{}, limit, cursor)
}

// CountSegment counts a segment's users now (GET /segments/{id}/count).
func (c *Client) CountSegment(ctx context.Context, id int64) (*parley.SegmentCount, error) {
	return do[parley.SegmentCount](ctx, c, "GET", "/segments/"+strconv.FormatInt(id, 10)+"/count", nil)
}

// PreviewSegment counts the users that criteria select, without saving
// them, and returns the first few (POST /segments/preview).
func (c *Client) PreviewSegment(ctx context.Context, criteria []parley.SegmentCriterion) (*parley.SegmentPreview, error) {
	return do[parley.SegmentPreview](ctx, c, "POST", "/segments/preview",
		parley.SegmentPreviewRequest{Criteria: parley.Some(parley.Criteria(criteria))})
}

// CreateCampaign schedules a campaign to a segment (POST /campaigns, D16).
// Set in.SendAt to an RFC 3339 time (time.Format(time.RFC3339)), or leave
// it out to send now.
func (c *Client) CreateCampaign(ctx context.Context, in parley.CampaignCreate) (*parley.Campaign, error) {
	return do[parley.Campaign](ctx, c, "POST", "/campaigns", in)
}

// GetCampaign reads a campaign with its current stats (GET /campaigns/{id}).
func (c *Client) GetCampaign(ctx context.Context, id int64) (*parley.Campaign, error) {
	return do[parley.Campaign](ctx, c, "GET", "/campaigns/"+strconv.FormatInt(id, 10), nil)
}

// ListCampaigns reads one page of campaigns, newest first (GET
// /campaigns), and the cursor of the next page ("" after the last).
func (c *Client) ListCampaigns(ctx context.Context, f parley.CampaignFilter) ([]*parley.Campaign, string, error) {
	return getPage[*parley.Campaign](ctx, c, "/campaigns", url.Values{}, f.Limit, f.Cursor)
}

// CancelCampaign cancels a scheduled or sending campaign and returns it
// (POST /campaigns/{id}/cancel); canceling a canceled one returns it as
// it is, a completed one is a 409 campaign_not_cancelable.
func (c *Client) CancelCampaign(ctx context.Context, id int64) (*parley.Campaign, error) {
	return do[parley.Campaign](ctx, c, "POST", "/campaigns/"+strconv.FormatInt(id, 10)+"/cancel", nil)
}

// UpdateCampaign changes the members of a scheduled campaign that in sets
// (POST /campaigns/{id}); a campaign that has started is a 409
// campaign_not_editable.
func (c *Client) UpdateCampaign(ctx context.Context, id int64, in parley.CampaignCreate) (*parley.Campaign, error) {
	return do[parley.Campaign](ctx, c, "POST", "/campaigns/"+strconv.FormatInt(id, 10), in)
}

// TestCampaign sends the campaign's content to one number, outside the
// campaign (POST /campaigns/{id}/test), and returns the message.
func (c *Client) TestCampaign(ctx context.Context, id int64, phoneNumber string) (*parley.Message, error) {
	return do[parley.Message](ctx, c, "POST", "/campaigns/"+strconv.FormatInt(id, 10)+"/test",
		parley.CampaignTest{PhoneNumber: parley.Some(phoneNumber)})
}

// CreateFlow makes a flow (POST /flows, D21).
func (c *Client) CreateFlow(ctx context.Context, in parley.FlowCreate) (*parley.Flow, error) {
	return do[parley.Flow](ctx, c, "POST", "/flows", in)
}

// GetFlow reads a flow with its stats (GET /flows/{id}).
func (c *Client) GetFlow(ctx context.Context, id int64) (*parley.Flow, error) {
	return do[parley.Flow](ctx, c, "GET", "/flows/"+strconv.FormatInt(id, 10), nil)
}

// ListFlows reads one page of flows, newest first (GET /flows), and the
// cursor of the next page ("" after the last).
func (c *Client) ListFlows(ctx context.Context, f parley.FlowFilter) ([]*parley.Flow, string, error) {
	return getPage[*parley.Flow](ctx, c, "/flows", url.Values{}, f.Limit, f.Cursor)
}

// UpdateFlow changes the members sent (POST /flows/{id}); a contact's run
// keeps the steps it entered with.
func (c *Client) UpdateFlow(ctx context.Context, id int64, in parley.FlowUpdate) (*parley.Flow, error) {
	return do[parley.Flow](ctx, c, "POST", "/flows/"+strconv.FormatInt(id, 10), in)
}

// DeleteFlow deletes a flow and ends its active runs canceled (DELETE
// /flows/{id}).
func (c *Client) DeleteFlow(ctx context.Context, id int64) (*parley.Flow, error) {
	return do[parley.Flow](ctx, c, "DELETE", "/flows/"+strconv.FormatInt(id, 10), nil)
}

// ListRuns reads one page of a flow's runs by id (GET /flows/{id}/runs).
func (c *Client) ListRuns(ctx context.Context, flowID int64, f parley.RunFilter) ([]*parley.FlowRun, string, error) {
	q := url.Values{}
	if f.UserID != 0 {
		q.Set("user_id", strconv.FormatInt(f.UserID, 10))
	}
	if f.Status != "" {
		q.Set("status", f.Status)
	}
	return getPage[*parley.FlowRun](ctx, c, "/flows/"+strconv.FormatInt(flowID, 10)+"/runs", q, f.Limit, f.Cursor)
}

// RecordEvent records an event of a contact, which may enter it into
// flows (POST /events, D21).
func (c *Client) RecordEvent(ctx context.Context, in parley.EventCreate) (*parley.UserEvent, error) {
	return do[parley.UserEvent](ctx, c, "POST", "/events", in)
}
