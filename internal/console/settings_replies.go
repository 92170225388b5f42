package console

import (
	"net/http"
	"strings"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/service"
)

// The Settings page's keyword answers (D22, issue #32): the texts Parley
// sends back to STOP, START and HELP, saved through the service that
// serves the admin settings API (keyword_replies), so the rules are the
// same. An empty box is the built-in text, shown under it.

func init() {
	Register(Page{
		Path: "settings/replies", Title: "Settings", Admin: true,
		Template: "settings*.html", Post: repliesSave,
	})
}

// repliesForm is the keyword answers' form: each keyword's text as
// sent, the built-in one, and its error.
type repliesForm struct {
	Fields []replyField
}

type replyField struct {
	Name, Keyword, Value, Builtin, Error string
}

// fillReplies gives d the form with the brand's texts, unless it has one
// (sent back with its errors).
func (c *Ctx) fillReplies(d *settingsData) error {
	if d.Replies != nil {
		return nil
	}
	st, err := c.Service.BrandSettings(c, c.BrandID())
	if err != nil {
		return err
	}
	r := st.KeywordReplies
	d.Replies = c.repliesForm(map[string]string{"stop": deref(r.Stop), "start": deref(r.Start), "help": deref(r.Help)}, "", "")
	return nil
}

func (c *Ctx) repliesForm(values map[string]string, errField, errMsg string) *repliesForm {
	stop, start, help := service.BuiltinKeywordReplies(c.Brand.Name)
	f := &repliesForm{}
	for _, k := range []struct{ name, word, builtin string }{{"stop", "STOP", stop}, {"start", "START", start}, {"help", "HELP", help}} {
		rf := replyField{Name: k.name, Keyword: k.word, Value: values[k.name], Builtin: k.builtin}
		if errField == "keyword_replies."+k.name {
			rf.Error = errMsg
		}
		f.Fields = append(f.Fields, rf)
	}
	return f
}

// repliesSave saves the three texts; an empty box restores the built-in.
func repliesSave(c *Ctx) error {
	values := map[string]string{}
	var u parley.KeywordRepliesUpdate
	for _, k := range []struct {
		name string
		dst  *parley.Optional[string]
	}{{"stop", &u.Stop}, {"start", &u.Start}, {"help", &u.Help}} {
		v := strings.TrimSpace(c.Form("reply_" + k.name))
		values[k.name] = v
		*k.dst = parley.Null[string]()
		if v != "" {
			*k.dst = parley.Some(v)
		}
	}
	if _, err := c.Service.UpdateBrandSettings(c, c.BrandID(), parley.BrandSettingsUpdate{KeywordReplies: parley.Some(u)}); err != nil {
		if parley.ErrorCode(err) != parley.EValidation {
			return err
		}
		d := settingsData{Replies: c.repliesForm(values, errField(err), parley.ErrorMessage(err))}
		return c.renderSettings(http.StatusUnprocessableEntity, d, "The keyword answers were not saved: see below.")
	}
	c.console.Logger.InfoContext(c, "console: keyword replies changed", "brand_id", c.BrandID(),
		"source", parley.SourceConsole, "operator", c.Operator.Email)
	return c.Redirect("settings?done=replies")
}
