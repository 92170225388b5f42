package console

import (
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/service"
)

// Sign-in, sign-out and one-time sign-in links (D19). The session is a
// random token in an HttpOnly, SameSite=Lax cookie (Secure under TLS); the
// database keeps only its hash (service.Operators).

const cookieName = "parley_session"

func sessionToken(r *http.Request) string {
	ck, err := r.Cookie(cookieName)
	if err != nil {
		return ""
	}
	return ck.Value
}

func (c *Console) authRoutes(mux *http.ServeMux) {
	signin := &Page{Title: "Sign in", tmpl: c.pageTemplate("signin.html")}
	c.signinPage = signin
	link := &Page{Title: "Sign in with a link", tmpl: c.pageTemplate("link.html")}
	c.chooseBrand = &Page{Title: "Choose a brand", tmpl: c.pageTemplate("choose_brand.html")}
	mux.Handle("GET "+Prefix+"signin", c.public(signin, func(x *Ctx) error {
		return x.RenderStatus(http.StatusOK, signinForm{Next: x.R.FormValue("next")}, "")
	}))
	mux.Handle("POST "+Prefix+"signin", c.public(signin, c.signIn))
	mux.Handle("POST "+Prefix+"signin/brand", c.public(c.chooseBrand, c.signInBrand))
	mux.Handle("POST "+Prefix+"signout", c.public(signin, c.signOut))
	mux.Handle("GET "+Prefix+"link", c.public(link, func(x *Ctx) error {
		// A GET only shows a button: mail scanners that follow links must
		// not use the link up. It says until when the link works.
		x.W.Header().Set("Referrer-Policy", "no-referrer")
		token := x.R.FormValue("token")
		exp, err := c.Operators.LinkExpires(x, token)
		if err != nil {
			status, _ := statusOf(parley.ErrorCode(err))
			if status >= 500 {
				return err
			}
			return x.RenderStatus(status, linkPage{}, parley.ErrorMessage(err))
		}
		return x.Render(linkPage{Token: token, Expires: exp.UTC().Format("2 January 2006 at 15:04 MST")})
	}))
	mux.Handle("POST "+Prefix+"link", c.public(link, func(x *Ctx) error {
		s, err := c.Operators.SignInWithLink(x, x.Form("token"))
		if err != nil {
			status, _ := statusOf(parley.ErrorCode(err))
			if status >= 500 {
				return err
			}
			return x.RenderStatus(status, linkPage{}, parley.ErrorMessage(err))
		}
		// A link is how an operator without a password, or who forgot
		// theirs, gets in: its session chooses one next, without the old.
		c.setSession(x, s.Token)
		return x.Redirect("password")
	}))
}

// linkPage is what link.html shows: the link's token and when it
// expires, or neither when it no longer works.
type linkPage struct{ Token, Expires string }

// signinForm is what signin.html shows again after a failure.
type signinForm struct {
	Email, Next string
}

// brandChoice is what choose_brand.html shows: a radio button per brand
// whose operator the password matched.
type brandChoice struct {
	Next    string
	Choices []service.BrandChoice
}

func (c *Console) signIn(x *Ctx) error {
	f := signinForm{Email: x.Form("email"), Next: x.Form("next")}
	s, choices, err := c.Operators.SignIn(x, f.Email, x.Form("password"), c.clientAddr(x.R))
	if err != nil {
		return signInFailed(x, f, err)
	}
	if s == nil {
		// The password matched operators of several brands: which one?
		// Each button carries a one-time token of its brand's operator.
		x.page = c.chooseBrand
		return x.Render(brandChoice{Next: f.Next, Choices: choices})
	}
	c.setSession(x, s.Token)
	http.Redirect(x.W, x.R, safeNext(f.Next), http.StatusSeeOther)
	return nil
}

// signInFailed shows the sign-in form again with the error; a busy server
// (no password hash slot, issue #31 item 6) and the throttle say when to
// come back in Retry-After.
func signInFailed(x *Ctx, f signinForm, err error) error {
	status, _ := statusOf(parley.ErrorCode(err))
	switch {
	case status == http.StatusServiceUnavailable && parley.ErrorCode(err) == parley.EUnavailable:
		x.W.Header().Set("Retry-After", strconv.Itoa(int(service.DefaultHashWait/time.Second)))
	case status >= 500:
		return err
	case status == http.StatusTooManyRequests:
		x.W.Header().Set("Retry-After", "60")
	}
	return x.RenderStatus(status, f, parley.ErrorMessage(err))
}

// signInBrand opens the session of the brand chosen after a sign-in.
func (c *Console) signInBrand(x *Ctx) error {
	s, err := c.Operators.ChooseBrand(x, x.Form("choice"))
	if err != nil {
		x.page = c.signinPage // sign in again
		return signInFailed(x, signinForm{Next: x.Form("next")}, err)
	}
	c.setSession(x, s.Token)
	http.Redirect(x.W, x.R, safeNext(x.Form("next")), http.StatusSeeOther)
	return nil
}

func (c *Console) signOut(x *Ctx) error {
	if tok := sessionToken(x.R); tok != "" {
		if err := c.Operators.SignOut(x, tok); err != nil {
			return err
		}
	}
	http.SetCookie(x.W, &http.Cookie{Name: cookieName, Value: "", Path: Prefix, MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: overTLS(x.R)})
	return x.Redirect("signin")
}

// setSession sets the session cookie. It has no Expires, so it ends with
// the browser; the server ends the session at its expiry in any case.
func (c *Console) setSession(x *Ctx, token string) {
	http.SetCookie(x.W, &http.Cookie{Name: cookieName, Value: token, Path: Prefix,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: overTLS(x.R)})
}

// overTLS reports whether the browser reached us over TLS: directly, or
// through a proxy that ended TLS and says so in X-Forwarded-Proto. Trusting
// the header is safe here: a client that sends it falsely only gets a
// cookie its own browser will not send back over plain HTTP.
func overTLS(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// safeNext keeps a redirect after sign-in inside the console: an address
// from the query string must not send the operator to another site.
func safeNext(next string) string {
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil ||
		!strings.HasPrefix(u.Path, Prefix) || strings.Contains(next, "\\") || strings.HasPrefix(u.Path, Prefix+"signin") {
		return Prefix
	}
	return u.RequestURI()
}

// clientAddr is the address sign-ins are throttled by (issue #31 item 3):
// the TCP peer, unless the peer is a trusted proxy (--trusted-proxy). Then
// X-Forwarded-For is read from the right, each proxy having appended the
// address it got the request from, and the first address that is not a
// trusted proxy's is the client: what is left of it the client may have
// written itself. Without trusted proxies the header is ignored, as any
// client can send one. A malformed entry ends the walk at the last proxy.
func (c *Console) clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if !c.trusted(host) {
		return host
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		hop := strings.TrimSpace(hops[i])
		if hop == "" {
			continue
		}
		if _, err := netip.ParseAddr(hop); err != nil {
			return host
		}
		if !c.trusted(hop) {
			return hop
		}
		host = hop
	}
	return host
}

// trusted reports whether addr is in one of the trusted proxies' ranges.
func (c *Console) trusted(addr string) bool {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return false
	}
	a = a.Unmap()
	for _, p := range c.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// public wraps a handler that runs without a session: sign-in and links.
func (c *Console) public(p *Page, h Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		x := &Ctx{Context: r.Context(), W: w, R: r, Service: c.Service, Operators: c.Operators,
			Now: c.Now(), page: p, console: c}
		if err := x.checkForm(); err != nil {
			c.answerError(x, err)
			return
		}
		if err := h(x); err != nil {
			c.answerError(x, err)
		}
	})
}

// crossOrigin answers a form posted from another site (D19).
func (c *Console) crossOrigin(w http.ResponseWriter, r *http.Request) {
	x := &Ctx{Context: r.Context(), W: w, R: r, console: c}
	if err := x.fail(http.StatusForbidden, "Forbidden", "This form was sent from another site, so it was refused."); err != nil {
		c.Logger.ErrorContext(r.Context(), "console: error page failed", "err", err)
	}
}
