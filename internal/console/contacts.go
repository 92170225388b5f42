package console

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/sendwindow"
)

// Contacts: search, and a contact's page with fields, custom data,
// location and local time, history (D18) and the conversation with a
// reply box (D19).
func init() {
	Register(Page{
		Path: "contacts", Title: "Contacts", Nav: "Contacts", Order: 10,
		Template: "contacts.html",
		Get:      contactsPage,
	})
	Register(Page{
		Path: "contacts/{id}", Title: "Contact",
		Template: "contact.html",
		Get:      contactPage,
		Post:     reply,
	})
	Register(Page{
		// The conversation alone, which the contact page's script
		// refreshes while a message's status may still change.
		Path: "contacts/{id}/conversation", Title: "Conversation",
		Template: "contact.html",
		Get: func(c *Ctx) error {
			u, err := c.contact()
			if err != nil {
				return err
			}
			conv, err := c.conversation(u)
			if err != nil {
				return err
			}
			return c.Fragment("conversation", conv)
		},
	})
}

// contact reads the contact of the path's {id}, of the operator's brand:
// another brand's id, a deleted contact or a malformed id are 404.
func (c *Ctx) contact() (*parley.User, error) {
	id, err := strconv.ParseInt(c.R.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		return nil, parley.Errorf(parley.ENotFound, "There is no such contact.")
	}
	u, err := c.Service.FindUserByID(c, c.BrandID(), id)
	if parley.ErrorCode(err) == parley.EUserNotFound {
		return nil, parley.Errorf(parley.ENotFound, "There is no such contact.")
	}
	return u, err
}

// contactView is what contact.html shows.
type contactView struct {
	User       *parley.User
	CustomData []keyValue
	// LocalTimes are the contact's local time in each zone D17 gives them.
	LocalTimes   []localTime
	History      []*parley.HistoryEntry
	MoreHistory  bool
	Conversation conversation
	Reply        string
	// OptedOut: no text can reach them (D8), so the reply box says so.
	OptedOut bool
	// Runs are the contact's ways through the brand's flows (D21), with
	// each flow's name.
	Runs      []*parley.FlowRun
	FlowNames map[int64]string
}

type keyValue struct{ Key, Value string }

type localTime struct {
	Zone, Time string
}

// conversation is the latest messages, oldest first (newest at the
// bottom), and whether one may still change status.
type conversation struct {
	UserID   int64
	Messages []*parley.Message
	Pending  bool
	// Zone is the brand's, for the times (a fragment of its own).
	Zone *time.Location
}

func contactPage(c *Ctx) error {
	u, err := c.contact()
	if err != nil {
		return err
	}
	v, err := c.contactView(u)
	if err != nil {
		return err
	}
	return c.renderContact(http.StatusOK, v, "")
}

func (c *Ctx) renderContact(status int, v *contactView, errMsg string) error {
	c.Title = displayName(v.User)
	return c.RenderStatus(status, v, errMsg)
}

func (c *Ctx) contactView(u *parley.User) (*contactView, error) {
	v := &contactView{User: u, OptedOut: u.MessagingConsent != nil && !*u.MessagingConsent}
	var data map[string]any
	if len(u.CustomData) > 0 && json.Unmarshal(u.CustomData, &data) == nil {
		for _, k := range slices.Sorted(maps.Keys(data)) {
			b, _ := json.Marshal(data[k])
			s := string(b)
			if str, ok := data[k].(string); ok {
				s = str
			}
			v.CustomData = append(v.CustomData, keyValue{k, s})
		}
	}
	settings, err := c.Service.BrandSettings(c, c.BrandID())
	if err != nil {
		return nil, err
	}
	zip := ""
	if u.Location != nil && u.Location.TimeZone != nil {
		zip = *u.Location.TimeZone
	}
	for _, loc := range sendwindow.Zones(zip, u.PhoneNumber, settings.TimeZone) {
		v.LocalTimes = append(v.LocalTimes, localTime{Zone: loc.String(), Time: c.Now.In(loc).Format("Mon 15:04 MST")})
	}
	hist, next, err := c.Service.UserHistory(c, c.BrandID(), u.ID, parley.HistoryFilter{Limit: 100})
	if err != nil {
		return nil, err
	}
	v.History, v.MoreHistory = hist, next != ""
	if v.Runs, err = c.Service.UserRuns(c, c.BrandID(), u.ID, 20); err != nil {
		return nil, err
	}
	if len(v.Runs) > 0 {
		flows, _, err := c.Service.ListFlows(c, c.BrandID(), parley.FlowFilter{Limit: 100})
		if err != nil {
			return nil, err
		}
		v.FlowNames = map[int64]string{}
		for _, f := range flows {
			v.FlowNames[f.ID] = f.Name
		}
	}
	if v.Conversation, err = c.conversation(u); err != nil {
		return nil, err
	}
	return v, nil
}

func (c *Ctx) conversation(u *parley.User) (conversation, error) {
	msgs, _, err := c.Service.ListMessages(c, c.BrandID(), parley.MessageFilter{UserID: u.ID, Limit: 50})
	if err != nil {
		return conversation{}, err
	}
	slices.Reverse(msgs) // newest at the bottom
	conv := conversation{UserID: u.ID, Messages: msgs, Zone: c.Zone()}
	for _, m := range msgs {
		if m.Direction == parley.DirectionOutbound && (m.Status == parley.StatusQueued || m.Status == parley.StatusSent) {
			conv.Pending = true
		}
	}
	return conv, nil
}

// reply sends the reply box's text to the contact (service SendMessage;
// history source console, detail the operator's email: D18).
func reply(c *Ctx) error {
	u, err := c.contact()
	if err != nil {
		return err
	}
	body := strings.TrimSpace(c.Form("body"))
	o := parley.Origin{Source: parley.SourceConsole, Detail: c.Operator.Email}
	_, err = c.Service.SendMessage(c, o, c.BrandID(), parley.MessageCreate{
		UserID: parley.Some(u.ID), Body: parley.Some(body), Type: parley.Some(parley.TypeConversational)})
	if err != nil {
		if code := parley.ErrorCode(err); code == parley.EInternal || code == parley.EUnavailable {
			return err
		}
		v, verr := c.contactView(u)
		if verr != nil {
			return verr
		}
		v.Reply = body
		status, _ := statusOf(parley.ErrorCode(err))
		return c.renderContact(status, v, "Not sent: "+parley.ErrorMessage(err))
	}
	http.Redirect(c.W, c.R, Prefix+"contacts/"+strconv.FormatInt(u.ID, 10)+"#conversation", http.StatusSeeOther)
	return nil
}

// displayName is a contact's name, or their number when they have none.
func displayName(u *parley.User) string {
	var parts []string
	for _, p := range []*string{u.FirstName, u.LastName} {
		if p != nil && strings.TrimSpace(*p) != "" {
			parts = append(parts, strings.TrimSpace(*p))
		}
	}
	if len(parts) == 0 {
		return u.PhoneNumber
	}
	return strings.Join(parts, " ")
}
