package console

import (
	"fmt"
	"html/template"
	"slices"
	"strings"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/service"
)

// The dashboard, the console's home for admins (agents, whose pages are
// contacts, the inbox and replies (D19), are sent to the inbox): contacts,
// opted in and out, the texts sent in the last 24 hours by where they are
// now (canceled apart from failed) and the texts received, a 7-day chart
// of texts sent and delivered per hour in the brand's zone, drawn as SVG
// on the server (no script), and the last campaigns with their results.
// A brand without contacts or campaigns is shown the first steps
// (issue #32).
func init() {
	Register(Page{
		Path: "", Title: "Dashboard", Nav: "Dashboard", Order: 0,
		Admin: true, AgentRedirect: "inbox",
		Template: "dashboard.html",
		Get: func(c *Ctx) error {
			st, err := c.console.Dashboard.Stats(c, c.BrandID())
			if err != nil {
				return err
			}
			// One row each (campaign_counts): cheap at any size.
			camps, _, err := c.Service.ListCampaigns(c, c.BrandID(), parley.CampaignFilter{Limit: dashboardCampaigns})
			if err != nil {
				return err
			}
			v := newDashboardView(st, c.Zone())
			for _, camp := range camps {
				v.Campaigns = append(v.Campaigns, campaignRow{Campaign: camp})
			}
			return c.Render(v)
		},
	})
}

// dashboardCampaigns is how many of the last campaigns the dashboard shows.
const dashboardCampaigns = 5

type dashboardView struct {
	*service.DashboardStats
	Statuses  []statusCount
	Received  int64
	Chart     chart
	Campaigns []campaignRow
	// ConsentDays are the opt-ins and opt-outs of each day of the chart's
	// span, in the brand's zone, newest first.
	ConsentDays []consentDay
}

type consentDay struct {
	Label   string
	In, Out int64
}

// consentDays adds the hourly opt-ins and opt-outs up by day of zone.
func consentDays(st *service.DashboardStats, zone *time.Location) []consentDay {
	var days []consentDay
	for i := range st.OptIns {
		label := st.Since.Add(time.Duration(i) * time.Hour).In(zone).Format("Mon 2 Jan")
		if len(days) == 0 || days[len(days)-1].Label != label {
			days = append(days, consentDay{Label: label})
		}
		d := &days[len(days)-1]
		d.In += st.OptIns[i]
		d.Out += st.OptOuts[i]
	}
	slices.Reverse(days)
	return days
}

// statusCount is a column of the 24-hour table: a plain label.
type statusCount struct {
	Label string
	Count int64
}

// chart is the SVG's geometry: a polyline per series over a 700 × 200 box.
type chart struct {
	Sent, Delivered       template.HTMLAttr // points="…"
	Max                   int64
	SentSum, DeliveredSum int64
	Days                  []chartTick
	From, To              string
	// Zone names the brand's zone, in which the hours are drawn.
	Zone string
}

type chartTick struct {
	X     int
	Label string
}

const chartW, chartH = 700, 200

// dashboardStatuses are the 24-hour table's columns, in a marketer's words.
var dashboardStatuses = []struct{ key, label string }{
	{parley.StatusQueued, "Waiting to go"},
	{parley.StatusSent, "Sent, no report yet"},
	{parley.StatusDelivered, "Delivered"},
	{parley.StatusUndelivered, "Not delivered"},
	{parley.StatusFailed, "Failed"},
	{parley.ErrorCodeCanceled, "Canceled"},
}

func newDashboardView(st *service.DashboardStats, zone *time.Location) dashboardView {
	v := dashboardView{DashboardStats: st, Received: st.Last24h["received"], ConsentDays: consentDays(st, zone)}
	for _, s := range dashboardStatuses {
		v.Statuses = append(v.Statuses, statusCount{s.label, st.Last24h[s.key]})
	}
	c := &v.Chart
	c.Max = 1
	for i := range st.Sent {
		c.Max = max(c.Max, st.Sent[i], st.Delivered[i])
		c.SentSum += st.Sent[i]
		c.DeliveredSum += st.Delivered[i]
	}
	c.Sent, c.Delivered = points(st.Sent, c.Max), points(st.Delivered, c.Max)
	n := len(st.Sent)
	for i := range n {
		// A tick at each midnight of the brand's zone (a zone an odd half
		// hour from UTC has none on the hour: its days start mid-bucket).
		if h := st.Since.Add(time.Duration(i) * time.Hour).In(zone); h.Hour() == 0 {
			c.Days = append(c.Days, chartTick{X: i * chartW / max(n-1, 1), Label: h.Format("Mon 2")})
		}
	}
	c.From = when(zone, st.Since)
	c.To = when(zone, st.Since.Add(time.Duration(n)*time.Hour))
	c.Zone = zone.String()
	return v
}

// FirstRun reports whether the brand has nothing yet: the page then
// guides its first steps.
func (v dashboardView) FirstRun() bool { return v.Contacts == 0 || len(v.Campaigns) == 0 }

// points is an SVG points attribute for counts scaled to the box.
func points(counts []int64, top int64) template.HTMLAttr {
	var b strings.Builder
	b.WriteString(`points="`)
	n := max(len(counts)-1, 1)
	for i, v := range counts {
		fmt.Fprintf(&b, "%d,%d ", i*chartW/n, chartH-int(v*chartH/top))
	}
	b.WriteString(`"`)
	return template.HTMLAttr(b.String())
}
