package console

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/service"
)

// The new-campaign (and edit) form's steps (issue #32): the form, then a
// review of what the campaign would do — consenting recipients, segments
// per message of the body rendered for a sample contact, the total, when
// it goes in the brand's zone, braces that are not placeholders — with a
// test send to a number the operator types, and only then "Send" or
// "Schedule". A date typed in the form schedules the campaign whichever
// radio is chosen: it is never lost to "Send now".

// campaignReview is what the review step shows.
type campaignReview struct {
	*service.CampaignReview
	Segment string // the segment's name
	// SampleName names the sample contact ("" when it has no name),
	// SampleNone says there is none.
	SampleName string
	SampleNone bool
	Now        bool      // sends on confirmation
	At         time.Time // when it is scheduled (not Now)
	// DateWins: "Send now" was chosen but a date typed; the date wins.
	DateWins  bool
	Zone      *time.Location
	Marketing bool
	// The test send: the number typed, and what became of it.
	TestTo, TestSent, TestError string
}

// readCampaignForm reads the form as sent.
func readCampaignForm(c *Ctx) campaignForm {
	return campaignForm{Name: strings.TrimSpace(c.Form("name")), SegmentID: c.Form("segment_id"), Body: c.Form("body"),
		Type: c.Form("type"), When: c.Form("when"), SendAt: strings.TrimSpace(c.Form("send_at"))}
}

// input is the form as the service's input; a typed date schedules.
func (c *Ctx) campaignInput(f campaignForm) (parley.CampaignCreate, error) {
	in := parley.CampaignCreate{Name: parley.Some(f.Name), Body: parley.Some(f.Body), Type: parley.Some(f.Type),
		SendAt: parley.Null[string]()}
	if f.SegmentID != "" {
		id, err := strconv.ParseInt(f.SegmentID, 10, 64)
		if err != nil {
			return in, parley.FieldError(parley.EValidation, "segment_id", "choose a segment")
		}
		in.SegmentID = parley.Some(id)
	}
	if f.When == "later" || f.SendAt != "" {
		at, err := time.ParseInLocation(localLayout, f.SendAt, c.Zone())
		if err != nil {
			return in, parley.FieldError(parley.EValidation, "send_at", "choose a date and time to send at, or choose Send now")
		}
		in.SendAt = parley.Some(at.Format(time.RFC3339))
	}
	return in, nil
}

// compose answers a post of the campaign form, new (edit nil) or an
// edit of a scheduled campaign, by its button.
func (c *Ctx) compose(f campaignForm, edit *parley.Campaign) error {
	d := campaignNewData{Form: f, Edit: edit}
	verb := "created"
	if edit != nil {
		verb = "saved"
	}
	fail := func(err error) error {
		switch parley.ErrorCode(err) {
		case parley.EValidation, parley.ESegmentNotFound, parley.EInvalidMediaItem, parley.EInvalidPhoneNumber:
		default:
			return err
		}
		field := errField(err)
		if parley.ErrorCode(err) == parley.ESegmentNotFound {
			field = "segment_id"
		}
		status, _ := statusOf(parley.ErrorCode(err))
		if status == http.StatusNotFound {
			status = http.StatusUnprocessableEntity // the page exists; a field is wrong
		}
		d.Errors = map[string]string{fieldName(field): parley.ErrorMessage(err)}
		d.Review = nil
		return c.renderCampaignNew(status, d, "The campaign was not "+verb+": see below.")
	}
	action := c.Form("action")
	if action == "" { // Enter in a field: the form's first step
		action = "review"
	}
	if action == "count" || action == "edit" { // the counter without the script; back from the review
		return c.renderCampaignNew(http.StatusOK, d, "")
	}
	in, err := c.campaignInput(f)
	if err != nil {
		return fail(err)
	}
	o := parley.Origin{Source: parley.SourceConsole, Detail: c.Operator.Email}
	switch action {
	case "create":
		var camp *parley.Campaign
		if edit != nil {
			// A campaign that started meanwhile: a 409 page that says so.
			camp, err = c.Service.UpdateCampaign(c, o, c.BrandID(), edit.ID, in)
		} else {
			camp, err = c.Service.CreateCampaign(c, o, c.BrandID(), in)
		}
		if err != nil {
			return fail(err)
		}
		return c.Redirect("campaigns/" + strconv.FormatInt(camp.ID, 10))
	case "review", "test":
	default:
		return parley.Errorf(parley.EValidation, "Unknown action: press one of the page's buttons.")
	}
	camp, err := c.Service.CheckCampaign(c, c.BrandID(), in)
	if err != nil {
		return fail(err)
	}
	r, err := c.Service.ReviewCampaign(c, c.BrandID(), camp.SegmentID, camp.Body, len(camp.MediaItemUUIDs))
	if err != nil {
		return fail(err)
	}
	d.Review = &campaignReview{CampaignReview: r, Zone: c.Zone(), Now: !in.SendAt.Valid, At: camp.SendAt.Time,
		DateWins: f.When != "later" && in.SendAt.Valid, Marketing: camp.Type == parley.TypeMarketing}
	if seg, err := c.Service.FindSegment(c, c.BrandID(), camp.SegmentID); err == nil {
		d.Review.Segment = seg.Name
	}
	if r.Sample == nil {
		d.Review.SampleNone = true
	} else {
		d.Review.SampleName = strings.TrimSpace(deref(r.Sample.FirstName) + " " + deref(r.Sample.LastName))
		if d.Review.SampleName == "" {
			d.Review.SampleName = r.Sample.PhoneNumber
		}
	}
	if action == "test" {
		d.Review.TestTo = strings.TrimSpace(c.Form("test_to"))
		m, err := c.Service.TestSendCampaign(c, o, c.BrandID(), service.CampaignTestSend{PhoneNumber: d.Review.TestTo,
			Body: camp.Body, MediaItemUUIDs: camp.MediaItemUUIDs, SegmentID: camp.SegmentID})
		switch {
		case parley.ErrorCode(err) == parley.EInvalidPhoneNumber || parley.ErrorCode(err) == parley.EValidation:
			d.Review.TestError = "No test was sent: " + parley.ErrorMessage(err) +
				" Type the number with its country code, such as +1 212 555 0100."
		case err != nil:
			return err
		default:
			d.Review.TestSent = "Test sent to " + d.Review.TestTo + ": “" + m.Body + "”. It is not counted in the campaign; " +
				"it shows in that contact's conversation."
		}
	}
	return c.renderCampaignNew(http.StatusOK, d, "")
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
