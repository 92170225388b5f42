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
// contacts, the inbox and replies (D19), are sent to the inbox): contacts, opted in and out, the last
// 24 hours' messages by status, and a 7-day chart of messages sent and
// delivered per hour, drawn as SVG on the server (no script).
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
			return c.Render(newDashboardView(st, c.Zone()))
		},
	})
}

type dashboardView struct {
	*service.DashboardStats
	Statuses []statusCount
	Chart    chart
}

type statusCount struct {
	Status string
	Count  int64
}

// chart is the SVG's geometry: a polyline per series over a 700 × 200 box.
type chart struct {
	Sent, Delivered       template.HTMLAttr // points="…"
	Max                   int64
	SentSum, DeliveredSum int64
	Days                  []chartTick
	From, To              string
}

type chartTick struct {
	X     int
	Label string
}

const chartW, chartH = 700, 200

// newDashboardView lays out st; the chart's days and span are in loc, the
// brand's zone (issue #32).
func newDashboardView(st *service.DashboardStats, loc *time.Location) dashboardView {
	v := dashboardView{DashboardStats: st}
	for _, s := range []string{parley.StatusQueued, parley.StatusSent, parley.StatusDelivered, parley.StatusUndelivered, parley.StatusFailed} {
		v.Statuses = append(v.Statuses, statusCount{s, st.Last24h[s]})
	}
	for s, n := range st.Last24h { // a status this list does not know yet
		if !slices.ContainsFunc(v.Statuses, func(c statusCount) bool { return c.Status == s }) {
			v.Statuses = append(v.Statuses, statusCount{s, n})
		}
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
		if h := st.Since.Add(time.Duration(i) * time.Hour).In(loc); h.Hour() == 0 {
			c.Days = append(c.Days, chartTick{X: i * chartW / max(n-1, 1), Label: h.Format("Mon 2")})
		}
	}
	c.From = when(loc, st.Since)
	c.To = when(loc, st.Since.Add(time.Duration(n)*time.Hour))
	return v
}

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
