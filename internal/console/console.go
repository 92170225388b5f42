// Package console is the operator console (D19, issue #18): server-rendered
// html/template pages under /console/, embedded in the binary, with no
// script a page needs to work and no CDN. Like internal/httpapi it never
// imports internal/store: it calls internal/service.
//
// # Adding a page
//
// A page is one Go file and one template. The Go file registers the page
// in an init func:
//
//	func init() {
//		Register(Page{
//			Path:     "webhooks",         // below /console/; may hold {wildcards}
//			Title:    "Webhooks",         // the <h1> and the tab's title
//			Nav:      "Webhooks", Order: 60, // in the nav bar ("" keeps it out)
//			Admin:    true,               // admins only; agents get 403 (or AgentRedirect)
//			Template: "webhooks.html",
//			Get:      webhooksPage,       // GET (and HEAD)
//			Post:     webhooksAction,     // POST, optional
//		})
//	}
//
//	func webhooksPage(c *Ctx) error {
//		list, err := c.Service.ListWebhooks(c, c.BrandID())
//		if err != nil {
//			return err // *parley.Error: its page and status (404, 422…); else 500
//		}
//		return c.Render(list) // the template sees it as .Data
//	}
//
// and templates/webhooks.html defines the page's body:
//
//	{{define "content"}}<table>…{{range .Data}}…{{end}}</table>{{end}}
//
// The layout around it (layout.html) gives the nav, the <h1> (.Title), the
// viewport and the stylesheet. Every handler runs with a signed-in operator
// (c.Operator) of one brand (c.BrandID()): scope every call to that brand,
// and answer another brand's ids with 404 (the service's not-found errors
// do). Forms post to the page's own path and answer with c.Redirect (post,
// redirect, get); cross-origin posts never reach a handler
// (http.CrossOriginProtection). A page that updates itself in place defines
// more templates in its file and answers a fragment with c.Fragment; a
// script it needs goes in static/ and is served from /console/static/.
//
// Rules every template keeps (D19): a <label> for every input, visible text
// on every button, <th> in tables, and no inline style or script (the
// Content-Security-Policy refuses them). Template functions: funcs.go.
//
// # Testing a page
//
// Plain HTTP tests (pages_test.go) sign in with env.signedIn and check each
// visitor's status: signed out, agent, admin, another brand's operator.
// Browser tests (browser_test.go) drive Chromium as a person would:
// b.signIn, b.Go(path), b.Fill(label, value), b.Submit(button text),
// b.H1(), b.WaitText(text) and b.checkPage(), which checks the rules above
// and that the page does not scroll sideways at phone width (b.Phone()).
package console

import (
	"embed"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/service"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Prefix is where the console is served.
const Prefix = "/console/"

// Config is what the console runs on.
type Config struct {
	Service   *service.Service
	Operators *service.Operators
	// Dashboard reads the dashboard's figures; nil makes one on Service.
	Dashboard *service.Dashboard
	// Importer runs the Imports page's CSV imports (issue #7).
	Importer *service.Importer
	// UploadTimeout is how long an admin's CSV upload may take to arrive
	// (the API's --upload-timeout); 0 means 10 min.
	UploadTimeout time.Duration
	Logger        *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// TrustedProxies are the reverse proxies whose X-Forwarded-For names
	// the client a sign-in is throttled by (--trusted-proxy).
	TrustedProxies []netip.Prefix
	// StorageFull reports errors that mean a disk is full: 503 with
	// Retry-After, as the API answers (issue #31 item 15).
	StorageFull func(error) bool
}

// Console is the console's HTTP handler.
type Console struct {
	Config
	pages []*Page
	base  *template.Template
	// errorTmpl shows errors and the pages that are no registered page.
	errorTmpl *template.Template
	handler   http.Handler
	// chooseBrand asks which brand after a sign-in that matched several;
	// signinPage is the sign-in form.
	chooseBrand, signinPage *Page
}

// New builds the console with every registered page.
func New(cfg Config) *Console {
	c := &Console{Config: cfg}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Dashboard == nil {
		c.Dashboard = service.NewDashboard(c.Service)
	}
	c.base = template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html"))
	mux := http.NewServeMux()
	static, _ := fs.Sub(staticFS, "static")
	files := http.StripPrefix(Prefix+"static/", http.FileServerFS(static))
	mux.Handle("GET "+Prefix+"static/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The files change only with the binary.
		w.Header().Set("Cache-Control", "public, max-age=3600")
		files.ServeHTTP(w, r)
	}))
	c.authRoutes(mux)
	for _, rp := range registered() {
		p := new(*rp) // each console its own copy: the templates are per console
		c.pages = append(c.pages, p)
		p.tmpl = template.Must(template.Must(c.base.Clone()).ParseFS(templateFS, "templates/"+p.Template))
		for _, inc := range p.Includes {
			p.tmpl = template.Must(p.tmpl.ParseFS(templateFS, "templates/"+inc))
		}
		path := Prefix + p.Path
		if p.Path == "" || strings.HasSuffix(p.Path, "/") {
			path += "{$}"
		}
		if p.Get != nil {
			mux.Handle("GET "+path, c.page(p, p.Get))
		}
		if p.Post != nil {
			mux.Handle("POST "+path, c.page(p, p.Post))
		}
	}
	c.errorTmpl = c.pageTemplate("error.html")
	mux.Handle(Prefix, c.page(&Page{Title: "Not found", tmpl: c.errorTmpl}, func(x *Ctx) error {
		return x.NotFound("There is no such page.")
	}))
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(c.crossOrigin))
	c.handler = securityHeaders(cop.Handler(mux))
	return c
}

// Handler returns the console's root handler, for paths under Prefix.
func (c *Console) Handler() http.Handler { return c.handler }

// Routes returns the console's routes for httpapi.Config.Extra.
func (c *Console) Routes() map[string]http.Handler {
	return map[string]http.Handler{"GET " + Prefix: c.handler, "POST " + Prefix: c.handler}
}

func (c *Console) pageTemplate(file string) *template.Template {
	return template.Must(template.Must(c.base.Clone()).ParseFS(templateFS, "templates/"+file))
}

// securityHeaders keeps the pages out of frames and caches, and lets them
// load only the console's own files.
func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "same-origin")
		if !strings.HasPrefix(r.URL.Path, Prefix+"static/") {
			hd.Set("Cache-Control", "no-store")
		}
		h.ServeHTTP(w, r)
	})
}

// navItem is one link of the nav bar.
type navItem struct {
	Label, Href string
	Active      bool
}

func (c *Console) nav(x *Ctx) []navItem {
	var out []navItem
	for _, p := range c.pages {
		if p.Nav == "" || (p.Admin && !x.Operator.IsAdmin()) {
			continue
		}
		out = append(out, navItem{Label: p.Nav, Href: Prefix + p.Path, Active: p == x.page})
	}
	return out
}

// registry holds the pages registered by init funcs.
var registry []*Page

// Register adds a page; call it from an init func (see the package
// comment). Pages appear in the nav by Order, then Nav.
func Register(p Page) {
	registry = append(registry, &p)
}

func registered() []*Page {
	out := slices.Clone(registry)
	slices.SortStableFunc(out, func(a, b *Page) int {
		if a.Order != b.Order {
			return a.Order - b.Order
		}
		return strings.Compare(a.Nav, b.Nav)
	})
	return out
}
