package console

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/service"
)

// Inbox (issue #32): the brand's conversations, newest text first, in
// views mine / unassigned / all and open / resolved, with a preview, unread
// and waiting marks and paging (conversations_brand_view,
// conversations_brand_assignee); and a conversation's page, which marks it
// read, with the reply box (which says when the contact opted out) and the
// buttons to assign, resolve and reopen.
func init() {
	Register(Page{
		Path: "inbox", Title: "Inbox", Nav: "Inbox", Order: 20,
		Template: "inbox.html",
		Get:      inboxList,
	})
	Register(Page{
		Path: "inbox/{id}", Title: "Conversation",
		Template: "inbox_conversation.html",
		Get:      inboxConversation,
		Post:     inboxAction,
	})
	Register(Page{
		// The messages alone, which console.js refreshes while a reply's
		// status may still change.
		Path: "inbox/{id}/messages", Title: "Conversation",
		Template: "inbox_conversation.html",
		Get: func(c *Ctx) error {
			u, err := c.contact()
			if err != nil {
				return err
			}
			t, err := c.thread(u)
			if err != nil {
				return err
			}
			return c.Fragment("inbox-thread", t)
		},
	})
}

// inboxTab is a link of the view chooser.
type inboxTab struct {
	Text, Href string
	Current    bool
}

type inboxData struct {
	Views, States []inboxTab
	Resolved      bool
	Conversations []service.Conversation
	Next          string // the next page's link, "" on the last
	Heading       string
}

// previewLen is how much of the latest message a row of the inbox shows.
const previewLen = 90

// preview is the beginning of a message, cut at a word when it is long.
func preview(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= previewLen {
		return s
	}
	cut := string(r[:previewLen])
	if i := strings.LastIndexByte(cut, ' '); i > previewLen/2 {
		cut = cut[:i]
	}
	return cut + "…"
}

func inboxList(c *Ctx) error {
	q := c.R.URL.Query()
	view, state := q.Get("view"), q.Get("state")
	if view != "mine" && view != "unassigned" {
		view = "all"
	}
	if state != "resolved" {
		state = "open"
	}
	v := service.InboxView{Resolved: state == "resolved"}
	switch view {
	case "mine":
		v.Assignee = c.Operator.ID
	case "unassigned":
		v.Assignee = -1
	}
	if at, id, ok := parseInboxCursor(q.Get("after")); ok {
		v.AfterAt, v.AfterUserID = at, id
	}
	cs, more, err := c.Service.Inbox(c, c.BrandID(), v)
	if err != nil {
		return err
	}
	link := func(view, state, after string) string {
		p := url.Values{"view": {view}, "state": {state}}
		if after != "" {
			p.Set("after", after)
		}
		return Prefix + "inbox?" + p.Encode()
	}
	for i := range cs {
		cs[i].Preview = preview(cs[i].Preview)
	}
	d := inboxData{Resolved: v.Resolved, Conversations: cs}
	for _, t := range []struct{ key, text string }{{"mine", "Mine"}, {"unassigned", "Unassigned"}, {"all", "All"}} {
		d.Views = append(d.Views, inboxTab{t.text, link(t.key, state, ""), t.key == view})
	}
	for _, t := range []struct{ key, text string }{{"open", "Open"}, {"resolved", "Resolved"}} {
		d.States = append(d.States, inboxTab{t.text, link(view, t.key, ""), t.key == state})
	}
	d.Heading = map[string]string{"mine": "Assigned to you", "unassigned": "Unassigned", "all": "All conversations"}[view] +
		map[string]string{"open": ", open", "resolved": ", resolved"}[state]
	if more {
		last := cs[len(cs)-1]
		d.Next = link(view, state, strconv.FormatInt(last.LastInbound.UnixMicro(), 10)+"-"+strconv.FormatInt(last.User.ID, 10))
	}
	return c.Render(d)
}

func parseInboxCursor(s string) (time.Time, int64, bool) {
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		return time.Time{}, 0, false
	}
	at, err1 := strconv.ParseInt(a, 10, 64)
	id, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || at <= 0 || id <= 0 {
		return time.Time{}, 0, false
	}
	return time.UnixMicro(at).UTC(), id, true
}

// thread is a conversation's latest messages, oldest first.
type thread struct {
	UserID   int64
	Messages []threadMessage
	Pending  bool
	Zone     *time.Location // a fragment of its own: no layout
}

// threadMessage is a message with its state in plain words.
type threadMessage struct {
	*parley.Message
	State string
}

func (c *Ctx) thread(u *parley.User) (thread, error) {
	msgs, _, err := c.Service.ListMessages(c, c.BrandID(), parley.MessageFilter{UserID: u.ID, Limit: 50})
	if err != nil {
		return thread{}, err
	}
	slices.Reverse(msgs) // newest at the bottom
	t := thread{UserID: u.ID, Zone: c.Zone()}
	for _, m := range msgs {
		if m.Direction == parley.DirectionOutbound && (m.Status == parley.StatusQueued || m.Status == parley.StatusSent) {
			t.Pending = true
		}
		t.Messages = append(t.Messages, threadMessage{m, messageState(m)})
	}
	return t, nil
}

// messageState says where a message is, in a marketer's words.
func messageState(m *parley.Message) string {
	if m.Direction == parley.DirectionInbound {
		return "received"
	}
	switch m.Status {
	case parley.StatusQueued:
		return "waiting to be sent"
	case parley.StatusSent:
		return "sent, not yet confirmed delivered"
	case parley.StatusDelivered:
		return "delivered"
	case parley.StatusUndelivered:
		return "not delivered"
	case parley.StatusFailed:
		if m.ErrorCode != nil && *m.ErrorCode == "canceled" {
			return "canceled"
		}
		return "failed"
	}
	return m.Status
}

type conversationData struct {
	Conv      *service.Conversation
	Thread    thread
	Operators []*parley.Operator
	Reply     string
	// OptedOut: the contact opted out, so a reply would not be sent.
	OptedOut bool
}

func (c *Ctx) conversationData(u *parley.User, conv *service.Conversation) (*conversationData, error) {
	d := &conversationData{Conv: conv, OptedOut: u.MessagingConsent != nil && !*u.MessagingConsent}
	var err error
	if d.Thread, err = c.thread(u); err != nil {
		return nil, err
	}
	if d.Operators, err = c.Operators.List(c, c.BrandID()); err != nil {
		return nil, err
	}
	return d, nil
}

func inboxConversation(c *Ctx) error {
	u, err := c.contact()
	if err != nil {
		return err
	}
	conv, err := c.Service.OpenConversation(c, c.BrandID(), u.ID)
	if err != nil {
		return c.NotFound(parley.ErrorMessage(err))
	}
	d, err := c.conversationData(u, conv)
	if err != nil {
		return err
	}
	c.Title = displayName(u)
	return c.Render(d)
}

// inboxAction answers the conversation page's buttons: reply, assign
// (to the operator chosen, or to the one signed in), resolve and reopen.
func inboxAction(c *Ctx) error {
	u, err := c.contact()
	if err != nil {
		return err
	}
	self := Prefix + "inbox/" + strconv.FormatInt(u.ID, 10)
	switch c.Form("do") {
	case "reply":
		body := strings.TrimSpace(c.Form("body"))
		o := parley.Origin{Source: parley.SourceConsole, Detail: c.Operator.Email}
		_, err = c.Service.SendMessage(c, o, c.BrandID(), parley.MessageCreate{
			UserID: parley.Some(u.ID), Body: parley.Some(body), Type: parley.Some(parley.TypeConversational)})
		if err != nil {
			return c.conversationError(u, err, body, "Not sent: ")
		}
		http.Redirect(c.W, c.R, self+"#reply", http.StatusSeeOther)
		return nil
	case "assign", "assign-me":
		id := c.Operator.ID
		if c.Form("do") == "assign" {
			if id, err = strconv.ParseInt(c.Form("assignee"), 10, 64); err != nil || id < 0 {
				id = 0
			}
		}
		err = c.Service.AssignConversation(c, c.BrandID(), u.ID, id)
	case "resolve":
		if err = c.Service.ResolveConversation(c, c.BrandID(), u.ID, true); err == nil {
			return c.Redirect("inbox")
		}
	case "reopen":
		err = c.Service.ResolveConversation(c, c.BrandID(), u.ID, false)
	default:
		return c.conversationError(u, parley.Errorf(parley.EInvalidRequest, "Choose what to do with one of the buttons."), "", "")
	}
	if err != nil {
		return c.conversationError(u, err, "", "Not changed: ")
	}
	http.Redirect(c.W, c.R, self, http.StatusSeeOther)
	return nil
}

// conversationError shows the conversation again with err above it and
// the reply typed kept.
func (c *Ctx) conversationError(u *parley.User, err error, body, prefix string) error {
	if code := parley.ErrorCode(err); code == parley.EInternal || code == parley.EUnavailable {
		return err
	}
	conv, cerr := c.Service.FindConversation(c, c.BrandID(), u.ID)
	if cerr != nil {
		return c.NotFound(parley.ErrorMessage(cerr))
	}
	d, derr := c.conversationData(u, conv)
	if derr != nil {
		return derr
	}
	d.Reply = body
	c.Title = displayName(u)
	status, _ := statusOf(parley.ErrorCode(err))
	return c.RenderStatus(status, d, prefix+parley.ErrorMessage(err))
}

// Keyword is the keyword an automatic answer answered, as the contact
// typed it in capitals (STOP, START, HELP).
func (m threadMessage) Keyword() string { return strings.ToUpper(m.AutoReply) }
