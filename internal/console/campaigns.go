package console

import (
	"net/http"
	"strconv"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/placeholder"
	"github.com/parleyhq/parley/internal/smsparts"
)

// The Campaigns pages (D19, D16, issue #18): the brand's campaigns with
// status and stats, the create form (segment, body with a live character
// and segment counter, type, now or a time in the brand's time zone), a
// campaign's progress refreshing while it sends, and Cancel after a
// confirmation. The same service as the v1 /campaigns API, so a refused
// campaign (past send_at, archived segment, body too long) creates
// nothing and its error is shown next to its field. Admins only.
func init() {
	Register(Page{
		Path: "campaigns", Title: "Campaigns", Nav: "Campaigns", Order: 40, Admin: true,
		Template: "campaigns.html", Get: campaignsPage,
	})
	Register(Page{
		Path: "campaigns/new", Title: "New campaign", Admin: true,
		Template: "campaign_new.html", Get: campaignNew, Post: campaignCreate,
	})
	// The body's counter, which static/live.js posts as the body changes.
	Register(Page{
		Path: "campaigns/counter", Title: "New campaign", Admin: true,
		Template: "campaign_new.html", Post: campaignCounter,
	})
	Register(Page{
		Path: "campaigns/{id}", Title: "Campaign", Admin: true,
		Template: "campaign.html", Get: campaignPage, Post: campaignCancel,
	})
	// The progress section alone, which static/console.js polls.
	Register(Page{
		Path: "campaigns/{id}/progress", Title: "Campaign", Admin: true,
		Template: "campaign.html", Get: campaignProgress,
	})
}

// campaignListSize is how many campaigns the list shows at once.
const campaignListSize = 25

type campaignsData struct {
	Campaigns []*parley.Campaign
	Next      string
}

func campaignsPage(c *Ctx) error {
	list, next, err := c.Service.ListCampaigns(c, c.BrandID(), parley.CampaignFilter{Limit: campaignListSize,
		Cursor: c.R.URL.Query().Get("cursor")})
	if err != nil {
		return err
	}
	return c.Render(campaignsData{Campaigns: list, Next: next})
}

// campaignForm is the create form as sent.
type campaignForm struct {
	Name, SegmentID, Body, Type, When, SendAt string
}

type campaignNewData struct {
	Form   campaignForm
	Errors map[string]string
	// Edit is the scheduled campaign the form changes; nil for a new one.
	Edit *parley.Campaign
	// Review, when set, shows what the campaign would do, before it is
	// sent or scheduled (campaign_review.go).
	Review   *campaignReview
	Segments []*parley.Segment
	// TimeZone is the brand's zone, in which SendAt is read.
	TimeZone string
	Counter  counterData
}

// counterData is the body counter: characters, segments, encoding, and
// the brace groups that are not placeholders (D21).
type counterData struct {
	Chars      int
	Parts      smsparts.Parts
	TooLong    bool
	MaxChars   int
	Suspicious []string
	// Placeholders: the body has some, so the count is of the text as
	// written; the review shows it rendered.
	Placeholders bool
}

func counterOf(body string) counterData {
	d := counterData{Chars: len([]rune(body)), Parts: smsparts.Count(body, 0),
		TooLong: len([]rune(body)) > parley.MaxMessageBody, MaxChars: parley.MaxMessageBody,
		Suspicious: placeholder.Suspicious(body)}
	if t, err := placeholder.Parse(body); err == nil {
		d.Placeholders = !t.Static()
	}
	return d
}

// brandZone is the brand's time zone (D17), UTC if it has none readable.
func (c *Ctx) brandZone() (*time.Location, error) {
	st, err := c.Service.BrandSettings(c, c.BrandID())
	if err != nil {
		return nil, err
	}
	loc, err := time.LoadLocation(st.TimeZone)
	if err != nil || st.TimeZone == "" {
		return time.UTC, nil
	}
	return loc, nil
}

func (c *Ctx) renderCampaignNew(status int, d campaignNewData, errMsg string) error {
	segs, err := c.Service.ListSegments(c, c.BrandID())
	if err != nil {
		return err
	}
	loc, err := c.brandZone()
	if err != nil {
		return err
	}
	d.Segments, d.TimeZone, d.Counter = segs, loc.String(), counterOf(d.Form.Body)
	if d.Form.Type == "" {
		d.Form.Type = parley.TypeMarketing
	}
	if d.Form.When == "" {
		d.Form.When = "now"
	}
	return c.RenderStatus(status, d, errMsg)
}

func campaignNew(c *Ctx) error {
	f := campaignForm{SegmentID: c.R.URL.Query().Get("segment")}
	if from := c.R.URL.Query().Get("from"); from != "" { // Duplicate
		camp, err := c.findCampaign(from)
		if err != nil {
			return err
		}
		f = c.campaignFormOf(camp)
		f.Name, f.When, f.SendAt = duplicateName(camp.Name), "now", ""
	}
	return c.renderCampaignNew(http.StatusOK, campaignNewData{Form: f}, "")
}

// localLayout is the value of an <input type="datetime-local">.
const localLayout = "2006-01-02T15:04"

func campaignCreate(c *Ctx) error {
	return c.compose(readCampaignForm(c), nil)
}

func campaignCounter(c *Ctx) error {
	return c.Fragment("counter", counterOf(c.Form("body")))
}

// campaignData is what campaign.html sees.
type campaignData struct {
	Campaign *parley.Campaign
	Segment  *parley.Segment // nil if it cannot be read
	// Confirm asks whether to cancel, before the cancel is sent.
	Confirm bool
	Notice  string
	Zone    *time.Location
}

// Done counts the messages that reached an end: what the progress bar
// shows out of those to send.
func (d campaignData) Done() int64 {
	s := d.Campaign.Stats
	return s.Delivered + s.Undelivered + s.Failed + s.Canceled
}

// ToSend is how many messages the campaign sends.
func (d campaignData) ToSend() int64 {
	s := d.Campaign.Stats
	return s.Queued + s.Sent + s.Delivered + s.Undelivered + s.Failed + s.Canceled
}

// Pending reports whether the campaign may still change.
func (d campaignData) Pending() bool {
	st := d.Campaign.Status
	return st == parley.CampaignScheduled || st == parley.CampaignSending
}

// Live reports whether the progress may still change: the campaign is
// scheduled or sending, or messages handed to the provider await their
// delivery report (a campaign completes once every message is handed
// over, D16, and its stats keep moving after that).
func (d campaignData) Live() bool {
	return d.Pending() || d.Campaign.Stats.Queued+d.Campaign.Stats.Sent > 0
}

// Local shows t in the brand's zone.
func (d campaignData) Local(t time.Time) string {
	return t.In(d.Zone).Format("2006-01-02 15:04 MST")
}

func (c *Ctx) campaignData() (campaignData, error) {
	id, err := strconv.ParseInt(c.R.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		return campaignData{}, parley.CampaignNotFound(0)
	}
	camp, err := c.Service.FindCampaign(c, c.BrandID(), id)
	if err != nil {
		return campaignData{}, err
	}
	loc, err := c.brandZone()
	if err != nil {
		return campaignData{}, err
	}
	d := campaignData{Campaign: camp, Zone: loc}
	d.Segment, _ = c.Service.FindSegment(c, c.BrandID(), camp.SegmentID)
	return d, nil
}

func campaignPage(c *Ctx) error {
	d, err := c.campaignData()
	if err != nil {
		return err
	}
	c.Title = "Campaign " + d.Campaign.Name
	q := c.R.URL.Query()
	d.Confirm = q.Get("confirm") == "cancel" && d.Pending()
	if q.Get("done") == "canceled" {
		d.Notice = "Campaign canceled: messages not yet handed to the provider will not be sent."
	}
	return c.Render(d)
}

func campaignProgress(c *Ctx) error {
	d, err := c.campaignData()
	if err != nil {
		return err
	}
	return c.Fragment("progress", d)
}

// campaignCancel cancels the campaign once the operator has confirmed
// (the Cancel button leads to a page that asks first).
func campaignCancel(c *Ctx) error {
	d, err := c.campaignData()
	if err != nil {
		return err
	}
	id := strconv.FormatInt(d.Campaign.ID, 10)
	if c.Form("action") != "cancel" {
		return parley.Errorf(parley.EValidation, "Unknown action: press one of the page's buttons.")
	}
	if c.Form("confirm") != "yes" {
		return c.Redirect("campaigns/" + id + "?confirm=cancel")
	}
	o := parley.Origin{Source: parley.SourceConsole, Detail: c.Operator.Email}
	if _, err := c.Service.CancelCampaign(c, o, c.BrandID(), d.Campaign.ID); err != nil {
		if parley.ErrorCode(err) == parley.ECampaignNotCancelable {
			c.Title = "Campaign " + d.Campaign.Name
			return c.RenderStatus(http.StatusConflict, d, parley.ErrorMessage(err))
		}
		return err
	}
	return c.Redirect("campaigns/" + id + "?done=canceled")
}
