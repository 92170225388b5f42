package console

import (
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/parleyhq/parley"
)

// Editing a scheduled campaign and duplicating any campaign (issue #32).
// Edit opens the campaign's form filled in, through the same review
// (campaign_review.go), until the campaign starts; Duplicate opens the
// new-campaign form filled in with a campaign's segment, message and
// type (campaigns/new?from=ID).
func init() {
	Register(Page{
		Path: "campaigns/{id}/edit", Title: "Edit campaign", Admin: true,
		Template: "campaign_new.html", Get: campaignEdit, Post: campaignEditPost,
	})
}

// findCampaign reads the brand's campaign of a path or query id.
func (c *Ctx) findCampaign(raw string) (*parley.Campaign, error) {
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id < 1 {
		return nil, parley.CampaignNotFound(0)
	}
	return c.Service.FindCampaign(c, c.BrandID(), id)
}

// campaignFormOf is the form of a stored campaign, its send_at in the
// brand's zone.
func (c *Ctx) campaignFormOf(camp *parley.Campaign) campaignForm {
	return campaignForm{Name: camp.Name, SegmentID: strconv.FormatInt(camp.SegmentID, 10), Body: camp.Body,
		Type: camp.Type, When: "later", SendAt: camp.SendAt.In(c.Zone()).Format(localLayout)}
}

// duplicateName is "Copy of " the name, within the name's bound.
func duplicateName(name string) string {
	n := "Copy of " + name
	for utf8.RuneCountInString(n) > parley.MaxCampaignName {
		_, size := utf8.DecodeLastRuneInString(n)
		n = n[:len(n)-size]
	}
	return n
}

// editable reads the campaign of the path; one that has started is a
// 409 page that says so and offers Duplicate.
func (c *Ctx) editable() (*parley.Campaign, error) {
	camp, err := c.findCampaign(c.R.PathValue("id"))
	if err != nil {
		return nil, err
	}
	if camp.Status != parley.CampaignScheduled {
		return nil, parley.Errorf(parley.ECampaignNotEditable,
			"Campaign %q is %s: only a scheduled campaign can be changed. Open it and press Duplicate to send it again.",
			camp.Name, camp.Status)
	}
	c.Title = "Edit campaign " + camp.Name
	return camp, nil
}

func campaignEdit(c *Ctx) error {
	camp, err := c.editable()
	if err != nil {
		return err
	}
	return c.renderCampaignNew(http.StatusOK, campaignNewData{Form: c.campaignFormOf(camp), Edit: camp}, "")
}

func campaignEditPost(c *Ctx) error {
	camp, err := c.editable()
	if err != nil {
		return err
	}
	return c.compose(readCampaignForm(c), camp)
}
