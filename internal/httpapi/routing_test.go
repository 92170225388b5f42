package httpapi_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
)

// routeSigned sends a request signed as brand A, with extra headers.
func routeSigned(t *testing.T, e *apitest.Env, method, target string, body []byte, extra http.Header) authResp {
	t.Helper()
	h := authHeaders(e.CredA.Username, e.CredA.Secret, method, target, body, e.ClientNow()) // a new date per request: replay protection (D2)
	for k, vs := range extra {
		h[k] = vs
	}
	return authSend(t, e, method, target, body, h)
}

// routeAllow parses an Allow header into a sorted list, leaving out HEAD
// (implied by GET).
func routeAllow(v string) []string {
	var out []string
	for m := range strings.SplitSeq(v, ",") {
		if m = strings.TrimSpace(m); m != "" && m != "HEAD" {
			out = append(out, m)
		}
	}
	slices.Sort(out)
	return out
}

func TestRouteUnknownPathIs404(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	paths := []string{
		"/nope", "/api", "/api/v2/users", "/api/v1", "/api/v1/", "/api/v1/nope", "/api/v1/users/1/nope",
		"/api/v1/user", "/api/v1/users/", "/API/V1/BRAND", "/api/v1/brand/x", "/healthz/x",
	}
	for _, p := range paths {
		t.Run(strings.ReplaceAll(p, "/", "_")+"Unsigned", func(t *testing.T) {
			r := authSend(t, e, "GET", p, nil, nil)
			msg := authWantError(t, r, http.StatusNotFound, parley.ENotFound)
			if msg == "" {
				t.Error("empty msg")
			}
		})
		t.Run(strings.ReplaceAll(p, "/", "_")+"Signed", func(t *testing.T) {
			authWantError(t, routeSigned(t, e, "GET", p, nil, nil), http.StatusNotFound, parley.ENotFound)
		})
	}
	t.Run("UnknownPathPOSTIs404", func(t *testing.T) {
		before := e.State(t)
		body := []byte(`{"phone_number":"+14155552671"}`)
		authWantError(t, routeSigned(t, e, "POST", "/api/v1/user", body, nil), http.StatusNotFound, parley.ENotFound)
		if e.State(t) != before {
			t.Error("a POST to an unknown path changed the database")
		}
	})
}

func TestRouteWrongMethodIs405(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	cases := []struct {
		method, path string
		allow        []string
	}{
		{"PUT", "/api/v1/users", []string{"GET", "POST"}},
		{"DELETE", "/api/v1/users", []string{"GET", "POST"}},
		{"PATCH", "/api/v1/users", []string{"GET", "POST"}},
		{"DELETE", "/api/v1/brand", []string{"GET"}},
		{"POST", "/api/v1/brand", []string{"GET"}},
		{"PATCH", "/api/v1/users/1", []string{"DELETE", "GET", "POST"}},
		{"PUT", "/api/v1/users/1", []string{"DELETE", "GET", "POST"}},
		{"PUT", "/api/v1/messages", []string{"GET", "POST"}},
		{"DELETE", "/api/v1/messages/1", []string{"GET"}},
		{"DELETE", "/api/v1/segments", []string{"GET", "POST"}},
		{"PATCH", "/api/v1/segments/1", []string{"DELETE", "GET", "POST"}},
		// A literal path beside a wildcard one takes its 405s per method.
		{"GET", "/api/v1/segments/preview", []string{"POST"}},
		{"DELETE", "/api/v1/segments/preview", []string{"POST"}},
		{"PUT", "/api/v1/segments/preview", []string{"POST"}},
		{"POST", "/api/v1/custom_data", []string{"GET"}},
		{"PUT", "/api/v1/files", []string{"POST"}},
		{"POST", "/api/v1/openapi.json", []string{"GET"}},
		{"POST", "/healthz", []string{"GET"}},
	}
	for _, tc := range cases {
		check := func(t *testing.T, r authResp) {
			t.Helper()
			authWantError(t, r, http.StatusMethodNotAllowed, parley.EMethodNotAllowed)
			allow := r.header.Get("Allow")
			if got := routeAllow(allow); !slices.Equal(got, tc.allow) {
				t.Errorf("Allow = %q, want %v (D1)", allow, tc.allow)
			}
			if strings.Contains(allow, "HEAD") && !slices.Contains(tc.allow, "GET") {
				t.Errorf("Allow = %q lists HEAD without GET", allow)
			}
		}
		t.Run(tc.method+strings.ReplaceAll(tc.path, "/", "_")+"Unsigned", func(t *testing.T) {
			check(t, authSend(t, e, tc.method, tc.path, nil, nil))
		})
		t.Run(tc.method+strings.ReplaceAll(tc.path, "/", "_")+"Signed", func(t *testing.T) {
			var body []byte
			if tc.method == "PUT" || tc.method == "POST" || tc.method == "PATCH" {
				body = []byte(`{}`)
			}
			check(t, routeSigned(t, e, tc.method, tc.path, body, nil))
		})
	}
	t.Run("PUTUsersChangesNothing", func(t *testing.T) {
		before := e.State(t)
		body := []byte(`{"phone_number":"+14155552671"}`)
		r := routeSigned(t, e, "PUT", "/api/v1/users", body, nil)
		authWantError(t, r, http.StatusMethodNotAllowed, parley.EMethodNotAllowed)
		if e.State(t) != before {
			t.Error("PUT /api/v1/users changed the database")
		}
	})
}

func TestRouteRequestID(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	type call struct {
		name string
		do   func(t *testing.T, extra http.Header) authResp
		want int
	}
	calls := []call{
		{"SuccessSigned", func(t *testing.T, h http.Header) authResp {
			return routeSigned(t, e, "GET", "/api/v1/brand", nil, h)
		}, 200},
		{"ValidationErrorSigned", func(t *testing.T, h http.Header) authResp {
			return routeSigned(t, e, "POST", "/api/v1/users", []byte(`{"phone_number":"+14155552671","first_name":"`+strings.Repeat("x", 51)+`"}`), h)
		}, 422},
		{"Unauthenticated", func(t *testing.T, h http.Header) authResp {
			return authSend(t, e, "GET", "/api/v1/brand", nil, h)
		}, 401},
		{"NotFound", func(t *testing.T, h http.Header) authResp {
			return authSend(t, e, "GET", "/api/v1/nope", nil, h)
		}, 404},
		{"MethodNotAllowed", func(t *testing.T, h http.Header) authResp {
			return authSend(t, e, "DELETE", "/api/v1/brand", nil, h)
		}, 405},
		{"UserNotFound", func(t *testing.T, h http.Header) authResp {
			return routeSigned(t, e, "GET", "/api/v1/users/999", nil, h)
		}, 404},
		{"Healthz", func(t *testing.T, h http.Header) authResp {
			return authSend(t, e, "GET", "/healthz", nil, h)
		}, 200},
	}
	for _, c := range calls {
		t.Run(c.name+"Echoed", func(t *testing.T) {
			const id = "req-7f3a9c01-test"
			r := c.do(t, http.Header{"X-Request-Id": {id}})
			if r.status != c.want {
				t.Fatalf("status = %d %s, want %d", r.status, r.body, c.want)
			}
			if got := r.header.Get("X-Request-Id"); got != id {
				t.Errorf("x-request-id = %q, want the one sent, %q (D3)", got, id)
			}
		})
		t.Run(c.name+"Generated", func(t *testing.T) {
			r1 := c.do(t, nil)
			r2 := c.do(t, nil)
			if r1.status != c.want || r2.status != c.want {
				t.Fatalf("status = %d, %d, want %d", r1.status, r2.status, c.want)
			}
			id1, id2 := r1.header.Get("X-Request-Id"), r2.header.Get("X-Request-Id")
			if id1 == "" || id2 == "" {
				t.Fatalf("x-request-id = %q, %q; want one generated when absent (D3)", id1, id2)
			}
			if id1 == id2 {
				t.Errorf("two requests got the same generated x-request-id %q (D3)", id1)
			}
			if len(r1.header.Values("X-Request-Id")) != 1 {
				t.Errorf("x-request-id sent %d times", len(r1.header.Values("X-Request-Id")))
			}
		})
	}
}

func TestRouteOperationalEndpoints(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	t.Run("HealthzIs200WithoutAuth", func(t *testing.T) {
		if r := authSend(t, e, "GET", "/healthz", nil, nil); r.status != 200 {
			t.Errorf("GET /healthz = %d %s, want 200 (D1)", r.status, r.body)
		}
	})
	t.Run("ReadyzIs200WithoutAuth", func(t *testing.T) {
		if r := authSend(t, e, "GET", "/readyz", nil, nil); r.status != 200 {
			t.Errorf("GET /readyz = %d %s, want 200 (D1)", r.status, r.body)
		}
	})
	t.Run("OpenAPIIs200WithoutAuth", func(t *testing.T) {
		r := authSend(t, e, "GET", "/api/v1/openapi.json", nil, nil)
		if r.status != 200 {
			t.Fatalf("GET /api/v1/openapi.json = %d %s, want 200 (D1)", r.status, r.body)
		}
		var doc map[string]any
		if err := json.Unmarshal(r.body, &doc); err != nil {
			t.Fatalf("openapi.json is not valid JSON: %v", err)
		}
		if v, _ := doc["openapi"].(string); !strings.HasPrefix(v, "3.1") {
			t.Errorf("openapi = %v, want 3.1.x (D1)", doc["openapi"])
		}
		if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Errorf("Content-Type = %q, want application/json", ct)
		}
		paths, _ := doc["paths"].(map[string]any)
		if len(paths) == 0 {
			t.Errorf("openapi.json has no paths")
		}
	})
	t.Run("MetricsIsPrometheusText", func(t *testing.T) {
		r := authSend(t, e, "GET", "/metrics", nil, nil)
		if r.status != 200 {
			t.Fatalf("GET /metrics = %d, want 200 (D1)", r.status)
		}
		if !strings.Contains(string(r.body), "go_goroutines") {
			t.Errorf("/metrics does not contain go_goroutines (D1)")
		}
		if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
			t.Errorf("/metrics Content-Type = %q, want Prometheus text format", ct)
		}
	})
	t.Run("OperationalEndpointsOutsideV1", func(t *testing.T) {
		for _, p := range []string{"/api/v1/healthz", "/api/v1/readyz", "/api/v1/metrics"} {
			authWantError(t, authSend(t, e, "GET", p, nil, nil), http.StatusNotFound, parley.ENotFound)
		}
	})
	t.Run("V1EndpointsNeedAuth", func(t *testing.T) {
		for _, p := range []string{"/api/v1/brand", "/api/v1/users?phone_number=%2B14155552671", "/api/v1/users/1",
			"/api/v1/messages", "/api/v1/messages/1", "/api/v1/files/" + isoNeverUsedFile, "/api/v1/segments", "/api/v1/custom_data"} {
			authWant401(t, authSend(t, e, "GET", p, nil, nil))
		}
	})
}

// Every answer, whatever produced it, forbids MIME sniffing: a browser
// must never render an API body as something other than its type.
func TestRouteNoSniffOnEveryAnswer(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	for _, tc := range []struct {
		name string
		r    func() authResp
	}{
		{"Healthz", func() authResp { return authSend(t, e, "GET", "/healthz", nil, nil) }},
		{"Readyz", func() authResp { return authSend(t, e, "GET", "/readyz", nil, nil) }},
		{"OpenAPI", func() authResp { return authSend(t, e, "GET", "/api/v1/openapi.json", nil, nil) }},
		{"Metrics", func() authResp { return authSend(t, e, "GET", "/metrics", nil, nil) }},
		{"UnknownPath404", func() authResp { return authSend(t, e, "GET", "/nope", nil, nil) }},
		{"WrongMethod405", func() authResp { return authSend(t, e, "PUT", "/api/v1/users", nil, nil) }},
		{"Unsigned401", func() authResp { return authSend(t, e, "GET", "/api/v1/brand", nil, nil) }},
		{"MediaRefused404", func() authResp { return authSend(t, e, "GET", "/media/"+isoNeverUsedFile, nil, nil) }},
		{"SignedSuccess", func() authResp { return routeSigned(t, e, "GET", "/api/v1/brand", nil, nil) }},
		{"SignedNotFound", func() authResp { return routeSigned(t, e, "GET", "/api/v1/users/999999", nil, nil) }},
		{"Validation422", func() authResp { return routeSigned(t, e, "POST", "/api/v1/users", []byte(`{}`), nil) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.r()
			if got := r.header.Values("X-Content-Type-Options"); len(got) != 1 || got[0] != "nosniff" {
				t.Errorf("status %d: X-Content-Type-Options = %q, want exactly nosniff", r.status, got)
			}
		})
	}
}
