package httpapi

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/parleyhq/parley"
)

// route is one endpoint. The table is the whole API in one place; the
// OpenAPI test checks the document against it.
type route struct {
	method, path string
	handler      http.Handler
}

func (s *Server) routeTable() []route {
	const v1 = "/api/v1"
	r := []route{
		{"GET", "/healthz", http.HandlerFunc(s.healthz)},
		{"GET", "/readyz", http.HandlerFunc(s.readyz)},
		{"GET", "/media/{file_id}", http.HandlerFunc(s.media)},
		{"GET", v1 + "/openapi.json", http.HandlerFunc(serveOpenAPI)},

		{"POST", v1 + "/users", s.authed(jsonBody, s.createUser)},
		{"GET", v1 + "/users", s.authed(noBody, s.findUserByPhone)},
		// A literal segment: ServeMux prefers it to {user_id}.
		{"GET", v1 + "/users/export", s.streamed(s.exportUsers)},
		{"GET", v1 + "/users/{user_id}", s.authed(noBody, s.getUser)},
		{"POST", v1 + "/users/{user_id}", s.authed(jsonBody, s.updateUser)},
		{"DELETE", v1 + "/users/{user_id}", s.authed(noBody, s.deleteUser)},
		{"GET", v1 + "/users/{user_id}/history", s.authed(noBody, s.userHistory)},

		{"POST", v1 + "/messages", s.authed(jsonBody, s.sendMessage)},
		{"GET", v1 + "/messages", s.authed(noBody, s.listMessages)},
		{"GET", v1 + "/messages/{message_id}", s.authed(noBody, s.getMessage)},

		{"POST", v1 + "/files", s.authed(multipartBody, s.uploadFile)},
		{"GET", v1 + "/files/{file_id}", s.authed(noBody, s.getFile)},

		{"POST", v1 + "/imports", s.authed(importBody, s.createImport)},
		{"GET", v1 + "/imports", s.authed(noBody, s.listImports)},
		{"GET", v1 + "/imports/{import_id}", s.authed(noBody, s.getImport)},
		{"GET", v1 + "/imports/{import_id}/errors", s.authed(noBody, s.importErrors)},

		{"POST", v1 + "/webhooks", s.authed(jsonBody, s.createWebhook)},
		{"GET", v1 + "/webhooks", s.authed(noBody, s.listWebhooks)},
		{"GET", v1 + "/webhooks/{webhook_id}", s.authed(noBody, s.getWebhook)},
		{"POST", v1 + "/webhooks/{webhook_id}", s.authed(jsonBody, s.updateWebhook)},
		{"DELETE", v1 + "/webhooks/{webhook_id}", s.authed(noBody, s.deleteWebhook)},
		{"POST", v1 + "/webhooks/{webhook_id}/rotate_secret", s.authed(noBody, s.rotateWebhookSecret)},
		{"GET", v1 + "/webhooks/{webhook_id}/deliveries", s.authed(noBody, s.listWebhookDeliveries)},
		{"POST", v1 + "/webhooks/{webhook_id}/test", s.authed(noBody, s.testWebhook)},
		{"POST", v1 + "/webhooks/{webhook_id}/deliveries/{delivery_id}/retry", s.authed(noBody, s.retryWebhookDelivery)},

		{"POST", v1 + "/segments", s.authed(jsonBody, s.createSegment)},
		{"GET", v1 + "/segments", s.authed(noBody, s.listSegments)},
		{"POST", v1 + "/segments/preview", s.authed(jsonBody, s.previewSegment)},
		{"GET", v1 + "/segments/{segment_id}", s.authed(noBody, s.getSegment)},
		{"POST", v1 + "/segments/{segment_id}", s.authed(jsonBody, s.updateSegment)},
		{"DELETE", v1 + "/segments/{segment_id}", s.authed(noBody, s.archiveSegment)},
		{"GET", v1 + "/segments/{segment_id}/users", s.authed(noBody, s.segmentUsers)},
		{"GET", v1 + "/segments/{segment_id}/count", s.authed(noBody, s.segmentCount)},

		{"POST", v1 + "/campaigns", s.authed(jsonBody, s.createCampaign)},
		{"GET", v1 + "/campaigns", s.authed(noBody, s.listCampaigns)},
		{"GET", v1 + "/campaigns/{campaign_id}", s.authed(noBody, s.getCampaign)},
		{"POST", v1 + "/campaigns/{campaign_id}", s.authed(jsonBody, s.updateCampaign)},
		{"POST", v1 + "/campaigns/{campaign_id}/test", s.authed(jsonBody, s.testCampaign)},
		{"POST", v1 + "/campaigns/{campaign_id}/cancel", s.authed(noBody, s.cancelCampaign)},

		{"POST", v1 + "/flows", s.authed(jsonBody, s.createFlow)},
		{"GET", v1 + "/flows", s.authed(noBody, s.listFlows)},
		{"GET", v1 + "/flows/{flow_id}", s.authed(noBody, s.getFlow)},
		{"POST", v1 + "/flows/{flow_id}", s.authed(jsonBody, s.updateFlow)},
		{"DELETE", v1 + "/flows/{flow_id}", s.authed(noBody, s.deleteFlow)},
		{"GET", v1 + "/flows/{flow_id}/runs", s.authed(noBody, s.listRuns)},
		{"POST", v1 + "/events", s.authed(jsonBody, s.recordEvent)},

		{"GET", v1 + "/custom_data", s.authed(noBody, s.listCustomFields)},
		{"GET", v1 + "/brand", s.authed(noBody, s.getBrand)},
	}
	if s.Simulator != nil {
		r = append(r, route{"POST", v1 + "/simulator/inbound", s.authed(jsonBody, s.simulateInbound)})
	}
	if s.OpsOnly {
		r = r[:2] // healthz, readyz
	} else if s.AdminToken != "" && s.AdminService != nil {
		r = append(r, s.adminRoutes()...)
	}
	if s.Webhooks == nil { // a server without webhooks configured
		r = slices.DeleteFunc(r, func(rt route) bool { return strings.Contains(rt.path, "/webhooks") })
	}
	if s.Metrics != nil {
		r = append(r, route{"GET", "/metrics", s.Metrics})
	}
	for pattern, h := range s.Extra {
		method, path, _ := strings.Cut(pattern, " ")
		r = append(r, route{method, path, h})
	}
	return r
}

// routes registers every route, a 405 with Allow for a known path with
// another method, and a 404 for everything else, all in the envelope (D1).
func (s *Server) routes(mux *http.ServeMux) {
	allow := map[string][]string{}
	var paths []string
	for _, rt := range s.routeTable() {
		mux.Handle(rt.method+" "+rt.path, rt.handler)
		if _, ok := allow[rt.path]; !ok {
			paths = append(paths, rt.path)
		}
		allow[rt.path] = append(allow[rt.path], rt.method)
		if rt.method == "GET" {
			allow[rt.path] = append(allow[rt.path], "HEAD")
		}
	}
	for _, p := range paths {
		methods := allow[p]
		slices.Sort(methods)
		header := strings.Join(methods, ", ")
		wrong := func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", header)
			s.writeError(w, r, parley.Errorf(parley.EMethodNotAllowed, "Method %s not allowed; allowed: %s.", r.Method, header))
		}
		if !shadows(p, paths) {
			mux.HandleFunc(p, wrong)
			continue
		}
		// A literal path that a wildcard path also matches (/segments/preview
		// and /segments/{segment_id}) takes its 405s method by method: a
		// pattern without a method would conflict with the wildcard's
		// method patterns, and ServeMux refuses such pairs.
		for _, m := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"} {
			if !slices.Contains(methods, m) {
				mux.HandleFunc(m+" "+p, wrong)
			}
		}
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, parley.Errorf(parley.ENotFound, "No route for %s.", r.URL.Path))
	})
}

// shadows reports whether another path of the table, one with
// wildcards, also matches the literal path p.
func shadows(p string, paths []string) bool {
	if strings.Contains(p, "{") {
		return false
	}
	ps := strings.Split(p, "/")
	for _, q := range paths {
		qs := strings.Split(q, "/")
		if q == p || !strings.Contains(q, "{") || len(qs) != len(ps) {
			continue
		}
		match := true
		for i := range qs {
			if qs[i] != ps[i] && !strings.HasPrefix(qs[i], "{") {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	if err := s.DB.Ping(ctx); err != nil {
		msg := "Database unreachable."
		if s.StorageFull != nil && s.StorageFull(err) {
			msg = "Storage full: writes fail."
		}
		s.writeError(w, r, parley.Errorf(parley.EUnavailable, "%s", msg))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}
