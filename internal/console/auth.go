package console

import (
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/parleyhq/parley"
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
	link := &Page{Title: "Sign in with a link", tmpl: c.pageTemplate("link.html")}
	mux.Handle("GET "+Prefix+"signin", c.public(signin, func(x *Ctx) error {
		return x.RenderStatus(http.StatusOK, signinForm{Next: x.R.FormValue("next")}, "")
	}))
	mux.Handle("POST "+Prefix+"signin", c.public(signin, c.signIn))
	mux.Handle("POST "+Prefix+"signout", c.public(signin, c.signOut))
	mux.Handle("GET "+Prefix+"link", c.public(link, func(x *Ctx) error {
		// A GET only shows a button: mail scanners that follow links must
		// not use the link up.
		x.W.Header().Set("Referrer-Policy", "no-referrer")
		return x.Render(x.R.FormValue("token"))
	}))
	mux.Handle("POST "+Prefix+"link", c.public(link, func(x *Ctx) error {
		s, err := c.Operators.SignInWithLink(x, x.Form("token"))
		if err != nil {
			status, _ := statusOf(parley.ErrorCode(err))
			if status >= 500 {
				return err
			}
			return x.RenderStatus(status, "", parley.ErrorMessage(err))
		}
		// A link is how an operator without a password, or who forgot
		// theirs, gets in: its session chooses one next, without the old.
		c.setSession(x, s.Token)
		return x.Redirect("password")
	}))
}

// signinForm is what signin.html shows again after a failure.
type signinForm struct {
	Email, Next string
}

func (c *Console) signIn(x *Ctx) error {
	f := signinForm{Email: x.Form("email"), Next: x.Form("next")}
	s, err := c.Operators.SignIn(x, f.Email, x.Form("password"), clientAddr(x.R))
	if err != nil {
		status, _ := statusOf(parley.ErrorCode(err))
		if status >= 500 {
			return err
		}
		return x.RenderStatus(status, f, parley.ErrorMessage(err))
	}
	c.setSession(x, s.Token)
	http.Redirect(x.W, x.R, safeNext(f.Next), http.StatusSeeOther)
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

// clientAddr is the address sign-ins are throttled by: the TCP peer. A
// proxy's X-Forwarded-For is not trusted, as any client can send one.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
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
