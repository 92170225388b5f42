package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/media"
	"github.com/parleyhq/parley/internal/service"
	"github.com/parleyhq/parley/internal/webhook"
	"github.com/parleyhq/parley/signing"
)

// These tests keep openapi.json (served verbatim at GET /api/v1/openapi.json,
// D1) equal to what the server implements: its route table, the members the
// handlers write, the error table and the signing rules (D2, D3).

const schemaRef = "#/components/schemas/"

// The security schemes that model the HMAC signing headers (D2).
var signingSchemes = map[string]string{
	"HmacUsername":  signing.HeaderUsername,
	"HmacDate":      signing.HeaderDate,
	"HmacDigest":    signing.HeaderDigest,
	"HmacSignature": signing.HeaderSignature,
}

// creations answer 201; every other operation 200 (D3).
var creations = map[string]bool{
	"POST /api/v1/users":    true,
	"POST /api/v1/messages": true,
	"POST /api/v1/files":    true,
	"POST /api/v1/webhooks": true,
	"POST /api/v1/imports":  true,

	"POST /api/v1/simulator/inbound": true,
	"POST /api/v1/segments":          true, // D15
	"POST /api/v1/campaigns":         true, // D16
	// A test send stores a message, as POST /messages does (issue #32).
	"POST /api/v1/campaigns/{campaign_id}/test": true,
	"POST /api/v1/flows":                        true, // D21
}

// accepted answer 202: the work they start goes on after the answer
// (POST /events enters the contact's flows, whose steps the workers run,
// D21).
var accepted = map[string]bool{
	"POST /api/v1/events": true,
}

// successCode is an operation's one success status (D3, D21).
func successCode(key string) string {
	switch {
	case creations[key]:
		return "201"
	case accepted[key]:
		return "202"
	}
	return "200"
}

var httpMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

type oaOperation struct {
	key  string // "GET /api/v1/users"
	item map[string]any
	op   map[string]any
}

func openAPIDoc(t *testing.T) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		t.Fatalf("openapi.json does not parse: %v", err)
	}
	return doc
}

func oaOperations(t *testing.T, doc map[string]any) []oaOperation {
	t.Helper()
	paths, ok := doc["paths"].(map[string]any)
	if !ok {
		t.Fatal("openapi.json: paths is not an object")
	}
	var ops []oaOperation
	for p, v := range paths {
		item, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("path %s is not an object", p)
		}
		for _, m := range httpMethods {
			if o, ok := item[m].(map[string]any); ok {
				ops = append(ops, oaOperation{key: strings.ToUpper(m) + " " + p, item: item, op: o})
			}
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].key < ops[j].key })
	return ops
}

// jsonPointer resolves a local reference ("#/components/schemas/User").
func jsonPointer(doc any, ref string) (any, bool) {
	p, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, false
	}
	if p == "" {
		return doc, true
	}
	if !strings.HasPrefix(p, "/") {
		return nil, false
	}
	cur := doc
	for _, tok := range strings.Split(p[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[tok]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// deref follows $ref until it reaches an object without one.
func deref(t *testing.T, doc map[string]any, v any) map[string]any {
	t.Helper()
	for range 20 {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("expected an object, got %T (%v)", v, v)
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return m
		}
		if v, ok = jsonPointer(doc, ref); !ok {
			t.Fatalf("$ref %q does not resolve", ref)
		}
	}
	t.Fatal("$ref chain too long (a loop?)")
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func stringSet(v any) []string {
	var out []string
	switch v := v.(type) {
	case []any:
		for _, s := range v {
			out = append(out, fmt.Sprint(s))
		}
	case []string:
		out = append(out, v...)
	}
	sort.Strings(out)
	return out
}

// diff describes how two sorted sets differ, "" when equal.
func diff(got, want []string) string {
	var missing, extra []string
	for _, w := range want {
		if !slices.Contains(got, w) {
			missing = append(missing, w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			extra = append(extra, g)
		}
	}
	if missing == nil && extra == nil {
		return ""
	}
	return fmt.Sprintf("missing %v, extra %v", missing, extra)
}

// stubWebhooks is a WebhookService that is never called: a server with a
// non-nil Webhooks serves the /webhooks routes, so the route table the
// tests compare with the document includes them.
type stubWebhooks struct{ parley.WebhookService }

// stubSimulator is a Simulator that is never called: a server with the
// sim provider serves POST /api/v1/simulator/inbound (D12).
type stubSimulator struct{ parley.Simulator }

func testServer() *Server {
	return New(Config{Metrics: http.NotFoundHandler(), Webhooks: stubWebhooks{}, Simulator: stubSimulator{}})
}

func TestOpenAPIDocument(t *testing.T) {
	doc := openAPIDoc(t)
	if doc["openapi"] != "3.1.0" {
		t.Errorf("openapi = %v, want 3.1.0", doc["openapi"])
	}
	info, _ := doc["info"].(map[string]any)
	if info["title"] != "Parley API" || info["version"] != "1.0.0" {
		t.Errorf("info = %v/%v, want Parley API/1.0.0 (spec: versioned 1.0.0)", info["title"], info["version"])
	}
	if d, _ := info["description"].(string); d == "" {
		t.Error("info.description is empty")
	}
	// Redocly's recommended lint wants a licence (.ci/openapi-lint).
	lic, _ := info["license"].(map[string]any)
	if n, _ := lic["name"].(string); n == "" {
		t.Error("info.license has no name")
	}
	if lic["identifier"] != nil && lic["url"] != nil {
		t.Error("info.license has both identifier and url; OpenAPI 3.1 allows one")
	}
	servers, _ := doc["servers"].([]any)
	if len(servers) != 1 || deref(t, doc, servers[0])["url"] != "http://127.0.0.1:8080" {
		t.Errorf("servers = %v, want [{url: http://127.0.0.1:8080}]", doc["servers"])
	}
}

// TestOpenAPIRoutes: the document's operations are exactly the route table.
func TestOpenAPIRoutes(t *testing.T) {
	doc := openAPIDoc(t)
	var want []string
	for _, rt := range testServer().routeTable() {
		key := rt.method + " " + rt.path
		if slices.Contains(want, key) {
			t.Errorf("route %s is in the table twice", key)
		}
		want = append(want, key)
	}
	sort.Strings(want)
	var got []string
	for _, o := range oaOperations(t, doc) {
		got = append(got, o.key)
	}
	if d := diff(got, want); d != "" {
		t.Errorf("operations in openapi.json differ from routeTable(): %s", d)
	}
}

// TestOpenAPISecurity: every /api/v1 operation but the document itself is
// signed (D2), answers 401, and succeeds with its D3 status; the rest are
// public.
func TestOpenAPISecurity(t *testing.T) {
	doc := openAPIDoc(t)
	sm, _ := deref(t, doc, doc["components"])["securitySchemes"].(map[string]any)
	if d := diff(sortedKeys(sm), sortedKeys(signingSchemes)); d != "" {
		t.Errorf("securitySchemes: %s", d)
	}
	for name, header := range signingSchemes {
		s, ok := sm[name].(map[string]any)
		if !ok {
			continue
		}
		if s["type"] != "apiKey" || s["in"] != "header" || s["name"] != header {
			t.Errorf("securitySchemes.%s = %v/%v/%v, want apiKey in header %s", name, s["type"], s["in"], s["name"], header)
		}
		if d, _ := s["description"].(string); d == "" {
			t.Errorf("securitySchemes.%s has no description", name)
		}
	}
	if sig, _ := sm["HmacSignature"].(map[string]any); sig != nil {
		d, _ := sig["description"].(string)
		for _, want := range []string{"(request-target)", "x-date:", "x-digest:", "SHA-256=", "IMF-fixdate"} {
			if !strings.Contains(d, want) {
				t.Errorf("HmacSignature description does not explain the signing string (%q missing)", want)
			}
		}
	}
	if _, ok := doc["security"]; ok {
		t.Error("top-level security is set; every operation states its own")
	}

	for _, o := range oaOperations(t, doc) {
		method, path, _ := strings.Cut(o.key, " ")
		signed := strings.HasPrefix(path, "/api/v1/") && path != "/api/v1/openapi.json"
		sec, ok := o.op["security"].([]any)
		if !ok {
			t.Errorf("%s: no security array", o.key)
			continue
		}
		responses, _ := o.op["responses"].(map[string]any)
		if !signed {
			if len(sec) != 0 {
				t.Errorf("%s: security = %v, want [] (no request signing)", o.key, sec)
			}
			if _, ok := responses["401"]; ok {
				t.Errorf("%s: a public route documents 401", o.key)
			}
			continue
		}
		if len(sec) == 0 {
			t.Errorf("%s: not signed", o.key)
		}
		optionalDigest := false
		for _, r := range sec {
			req, _ := r.(map[string]any)
			names := sortedKeys(req)
			core := []string{"HmacDate", "HmacSignature", "HmacUsername"}
			switch {
			case slices.Equal(names, core):
				optionalDigest = true
				if method == "POST" || method == "PUT" {
					t.Errorf("%s: a requirement without HmacDigest, but x-digest is required on %s (D2)", o.key, method)
				}
			case slices.Equal(names, []string{"HmacDate", "HmacDigest", "HmacSignature", "HmacUsername"}):
			default:
				t.Errorf("%s: security requirement %v, want the signing headers together", o.key, names)
			}
		}
		if method != "POST" && method != "PUT" && !optionalDigest {
			t.Errorf("%s: x-digest is optional on %s (D2) but every requirement demands it", o.key, method)
		}
		if _, ok := responses["401"]; !ok {
			t.Errorf("%s: no 401 response", o.key)
		}
		want := successCode(o.key)
		var success []string
		for code := range responses {
			if strings.HasPrefix(code, "2") {
				success = append(success, code)
			}
		}
		if len(success) != 1 || success[0] != want {
			t.Errorf("%s: success responses %v, want [%s] (D3)", o.key, success, want)
		}
	}
}

// noClientErrors are the operations that answer no 4xx of their own: no
// signing, body or parameter to refuse. .ci/.redocly.lint-ignore.yaml names
// the same ones for the operation-4xx-response rule.
var noClientErrors = map[string]bool{
	"GET /healthz":             true,
	"GET /readyz":              true,
	"GET /metrics":             true,
	"GET /api/v1/openapi.json": true,
}

// TestOpenAPIErrors: error responses use the envelope, with statuses and
// types from the one error table, and the errors the auth layer, the body
// readers and the path ids can raise are documented.
func TestOpenAPIErrors(t *testing.T) {
	doc := openAPIDoc(t)
	statuses := map[string]bool{}
	var types []string
	for code, status := range statusOf {
		statuses[strconv.Itoa(status)] = true
		types = append(types, code)
	}
	sort.Strings(types)
	detail, ok := jsonPointer(doc, schemaRef+"Error/properties/detail/properties/type")
	if !ok {
		t.Fatal("Error schema has no detail.type")
	}
	if d := diff(stringSet(deref(t, doc, detail)["enum"]), types); d != "" {
		t.Errorf("Error detail.type enum differs from the error table (errors.go statusOf): %s", d)
	}

	pathIDs := regexp.MustCompile(`\{(user_id|message_id|webhook_id|delivery_id|segment_id|campaign_id|flow_id)\}`)
	for _, o := range oaOperations(t, doc) {
		responses, _ := o.op["responses"].(map[string]any)
		for code, r := range responses {
			if code[0] != '4' && code[0] != '5' {
				continue
			}
			if !statuses[code] {
				t.Errorf("%s: response %s is a status no error type has (D3)", o.key, code)
			}
			content, _ := deref(t, doc, r)["content"].(map[string]any)
			mt, _ := content["application/json"].(map[string]any)
			if s, _ := mt["schema"].(map[string]any); s["$ref"] != schemaRef+"Error" || len(content) != 1 {
				t.Errorf("%s: response %s is not application/json Error", o.key, code)
			}
		}
		has4xx := false
		for code := range responses {
			has4xx = has4xx || code[0] == '4'
		}
		if !has4xx && !noClientErrors[o.key] {
			t.Errorf("%s: no 4xx response (Redocly's recommended lint wants one)", o.key)
		}
		_, path, _ := strings.Cut(o.key, " ")
		var want []string
		if strings.HasPrefix(path, "/api/v1/") && path != "/api/v1/openapi.json" {
			want = append(want, "400", "401", "413", "429", "500") // authenticate, readBody, rate limit (D13)
			if strings.HasPrefix(o.key, "POST ") {
				want = append(want, "409") // Idempotency-Key reused or in use (D13)
			}
		}
		if pathIDs.MatchString(path) || o.op["requestBody"] != nil {
			want = append(want, "422") // pathID, unknown members
		}
		switch o.key {
		case "POST /api/v1/users":
			want = append(want, "409")
		case "POST /api/v1/files":
			want = append(want, "415")
		case "GET /api/v1/webhooks/{webhook_id}/deliveries", "GET /api/v1/segments/{segment_id}/users",
			"GET /api/v1/campaigns", "GET /api/v1/messages":
			want = append(want, "422") // limit, cursor
		case "POST /api/v1/campaigns":
			want = append(want, "404", "422") // segment_not_found, validation (D16)
		case "POST /api/v1/segments", "POST /api/v1/segments/{segment_id}":
			want = append(want, "409") // name taken (D15)
		case "GET /api/v1/flows", "GET /api/v1/flows/{flow_id}/runs":
			want = append(want, "422") // limit, cursor; user_id, status (D21)
		case "POST /api/v1/flows":
			want = append(want, "404", "422") // segment_not_found of a segment_entered trigger, validation (D21)
		case "POST /api/v1/events":
			want = append(want, "404", "422") // user_not_found, validation (D21)
		}
		if strings.Contains(path, "{webhook_id}") || strings.Contains(path, "{segment_id}") || strings.Contains(path, "{campaign_id}") ||
			strings.Contains(path, "{flow_id}") {
			want = append(want, "404") // another brand's or a missing endpoint or segment
		}
		switch o.key {
		case "GET /readyz":
			want = append(want, "503")
		case "GET /api/v1/messages":
			want = append(want, "404") // campaign_id of no campaign of the brand (D16)
		}
		for _, code := range want {
			if _, ok := responses[code]; !ok {
				t.Errorf("%s: no %s response", o.key, code)
			}
		}
	}
}

// TestOpenAPIParameters: path parameters match the route patterns, with
// the types the handlers parse; query parameters match the handlers.
func TestOpenAPIParameters(t *testing.T) {
	doc := openAPIDoc(t)
	pathParam := map[string]map[string]any{
		"user_id":     {"type": "integer", "minimum": 1.0}, // pathID
		"message_id":  {"type": "integer", "minimum": 1.0}, // pathID
		"webhook_id":  {"type": "integer", "minimum": 1.0}, // pathID
		"delivery_id": {"type": "integer", "minimum": 1.0}, // pathID
		"import_id":   {"type": "integer", "minimum": 1.0}, // pathID
		"segment_id":  {"type": "integer", "minimum": 1.0}, // pathID
		"campaign_id": {"type": "integer", "minimum": 1.0}, // pathID
		"flow_id":     {"type": "integer", "minimum": 1.0}, // pathID
		"file_id":     {"type": "string", "format": "uuid"},
	}
	// The query parameters each handler reads, and whether it requires them.
	query := map[string]map[string]bool{
		"GET /api/v1/users":                            {"phone_number": true},
		"GET /api/v1/messages":                         {"user_id": false, "campaign_id": false, "limit": false, "cursor": false},
		"GET /api/v1/campaigns":                        {"limit": false, "cursor": false},
		"GET /media/{file_id}":                         {"brand": true, "expires": true, "sig": true},
		"GET /api/v1/webhooks/{webhook_id}/deliveries": {"limit": false, "cursor": false},
		"GET /api/v1/imports":                          {"limit": false, "cursor": false},
		"GET /api/v1/users/{user_id}/history":          {"field": false, "limit": false, "cursor": false},
		"GET /api/v1/users/export":                     {"segment_id": false},
		"GET /api/v1/segments/{segment_id}/users":      {"limit": false, "cursor": false},
		"GET /api/v1/flows":                            {"limit": false, "cursor": false},
		"GET /api/v1/flows/{flow_id}/runs":             {"user_id": false, "status": false, "limit": false, "cursor": false},
	}
	braces := regexp.MustCompile(`\{([^}]*)\}`)
	for _, o := range oaOperations(t, doc) {
		_, path, _ := strings.Cut(o.key, " ")
		var params []any
		if p, ok := o.item["parameters"].([]any); ok {
			params = append(params, p...)
		}
		if p, ok := o.op["parameters"].([]any); ok {
			params = append(params, p...)
		}
		gotPath := map[string]bool{}
		gotQuery := map[string]bool{}
		gotHeader := map[string]bool{}
		for _, p := range params {
			pm := deref(t, doc, p)
			name, _ := pm["name"].(string)
			switch pm["in"] {
			case "path":
				gotPath[name] = true
				if pm["required"] != true {
					t.Errorf("%s: path parameter %s is not required", o.key, name)
				}
				want, ok := pathParam[name]
				if !ok {
					t.Errorf("%s: path parameter %s has no expected type in this test", o.key, name)
					continue
				}
				s := deref(t, doc, pm["schema"])
				for k, v := range want {
					if s[k] != v {
						t.Errorf("%s: path parameter %s: %s = %v, want %v", o.key, name, k, s[k], v)
					}
				}
			case "query":
				gotQuery[name] = pm["required"] == true
			case "header":
				gotHeader[name] = true
			default:
				t.Errorf("%s: parameter %s in %v", o.key, name, pm["in"])
			}
		}
		var wantPath []string
		for _, m := range braces.FindAllStringSubmatch(path, -1) {
			wantPath = append(wantPath, m[1])
		}
		sort.Strings(wantPath)
		if d := diff(sortedKeys(gotPath), wantPath); d != "" {
			t.Errorf("%s: path parameters: %s", o.key, d)
		}
		if strings.HasPrefix(o.key, "POST /api/v1/") && !gotHeader["Idempotency-Key"] {
			t.Errorf("%s: no Idempotency-Key header parameter (D13)", o.key)
		}
		wantQuery := query[o.key]
		if d := diff(sortedKeys(gotQuery), sortedKeys(wantQuery)); d != "" {
			t.Errorf("%s: query parameters: %s", o.key, d)
		}
		for name, req := range wantQuery {
			if got, ok := gotQuery[name]; ok && got != req {
				t.Errorf("%s: query parameter %s required = %v, want %v", o.key, name, got, req)
			}
		}
	}
	for _, ptr := range []string{"#/paths/~1api~1v1~1messages/get/parameters",
		"#/paths/~1api~1v1~1webhooks~1{webhook_id}~1deliveries/get/parameters",
		"#/paths/~1api~1v1~1segments~1{segment_id}~1users/get/parameters",
		"#/paths/~1api~1v1~1flows/get/parameters",
		"#/paths/~1api~1v1~1flows~1{flow_id}~1runs/get/parameters"} {
		params, ok := jsonPointer(doc, ptr)
		if !ok {
			t.Errorf("no %s", ptr)
			continue
		}
		found := false
		for _, p := range params.([]any) {
			if pm := deref(t, doc, p); pm["name"] == "limit" {
				found = true
				s := deref(t, doc, pm["schema"])
				if s["minimum"] != 1.0 || s["maximum"] != float64(service.MaxPageSize) || s["default"] != float64(service.DefaultPageSize) {
					t.Errorf("%s limit: minimum %v maximum %v default %v, want 1, %d and %d", ptr, s["minimum"], s["maximum"], s["default"],
						service.MaxPageSize, service.DefaultPageSize)
				}
			}
		}
		if !found {
			t.Errorf("%s: no limit parameter", ptr)
		}
	}
}

// jsonField is a member a Go type encodes or decodes.
type jsonField struct {
	name string
	typ  reflect.Type
}

func jsonFields(t reflect.Type) []jsonField {
	var out []jsonField
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, jsonField{name, f.Type})
	}
	return out
}

// goJSONTypes is the set of JSON types a Go type encodes as; nil when any.
// Slices count as arrays only: the services never return a nil one (D8, D10).
func goJSONTypes(t reflect.Type) []string {
	switch t {
	case reflect.TypeFor[parley.Time]():
		return []string{"string"}
	case reflect.TypeFor[json.RawMessage]():
		return nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		s := goJSONTypes(t.Elem())
		if s == nil {
			return nil
		}
		s = append(s, "null")
		sort.Strings(s)
		return s
	case reflect.String:
		return []string{"string"}
	case reflect.Bool:
		return []string{"boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return []string{"integer"}
	case reflect.Float32, reflect.Float64:
		return []string{"number"}
	case reflect.Slice, reflect.Array:
		return []string{"array"}
	case reflect.Struct, reflect.Map:
		return []string{"object"}
	}
	return nil
}

// schemaTypes is the set of JSON types a schema allows, following $ref,
// anyOf and oneOf.
func schemaTypes(t *testing.T, doc map[string]any, s any) []string {
	t.Helper()
	m := deref(t, doc, s)
	set := map[string]bool{}
	switch ty := m["type"].(type) {
	case string:
		set[ty] = true
	case []any:
		for _, x := range ty {
			set[fmt.Sprint(x)] = true
		}
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if alts, ok := m[k].([]any); ok {
			for _, a := range alts {
				for _, ty := range schemaTypes(t, doc, a) {
					set[ty] = true
				}
			}
		}
	}
	return sortedKeys(set)
}

// refsIn lists the $refs inside a schema, without following them.
func refsIn(v any) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && k == "$ref" {
				out = append(out, s)
			} else {
				out = append(out, refsIn(x)...)
			}
		}
	case []any:
		for _, x := range v {
			out = append(out, refsIn(x)...)
		}
	}
	return out
}

func structOf(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t == reflect.TypeFor[parley.Time]() {
		return nil
	}
	return t
}

func encodedKeys(t *testing.T, v any) []string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%T does not encode as an object: %s", v, b)
	}
	return sortedKeys(m)
}

// checkMembers compares a response schema with what encoding/json makes of
// a Go value: full has every optional member set, zero is the zero value.
func checkMembers(t *testing.T, doc map[string]any, where string, schema any, full, zero any) {
	t.Helper()
	s := deref(t, doc, schema)
	props, _ := s["properties"].(map[string]any)
	if d := diff(sortedKeys(props), encodedKeys(t, full)); d != "" {
		t.Errorf("%s: properties differ from the members %T encodes: %s", where, full, d)
	}
	if d := diff(stringSet(s["required"]), encodedKeys(t, zero)); d != "" {
		t.Errorf("%s: required differs from the members %T always encodes: %s", where, zero, d)
	}
	if s["additionalProperties"] != false {
		t.Errorf("%s: additionalProperties is not false; the members are exact", where)
	}
	for _, f := range jsonFields(reflect.TypeOf(full)) {
		p, ok := props[f.name]
		if !ok {
			continue
		}
		if want := goJSONTypes(f.typ); want != nil {
			if got := schemaTypes(t, doc, p); !slices.Equal(got, want) {
				t.Errorf("%s.%s: schema types %v, Go %v encodes as %v", where, f.name, got, f.typ, want)
			}
		}
		if st := structOf(f.typ); st != nil {
			ref := schemaRef + st.Name()
			if _, isComponent := jsonPointer(doc, ref); isComponent && !slices.Contains(refsIn(p), ref) {
				t.Errorf("%s.%s: does not refer to %s", where, f.name, ref)
			}
		}
	}
}

// TestOpenAPIResponseMembers: schemas list exactly the members the Go types
// encode, with the right JSON types, and the handlers' results match their
// operations' success schemas.
func TestOpenAPIResponseMembers(t *testing.T) {
	doc := openAPIDoc(t)
	components := []struct {
		schema     string
		full, zero any
	}{
		{"User", parley.User{Location: &parley.Location{}, CustomData: json.RawMessage(`{}`)}, parley.User{}},
		{"Location", parley.Location{}, parley.Location{}},
		{"Message", parley.Message{}, parley.Message{}},
		{"MessagePage", listPage[*parley.Message]{}, listPage[*parley.Message]{}},
		{"HistoryEntry", parley.HistoryEntry{}, parley.HistoryEntry{}},
		{"HistoryPage", listPage[*parley.HistoryEntry]{}, listPage[*parley.HistoryEntry]{}},
		{"File", parley.File{}, parley.File{}},
		{"Brand", parley.Brand{}, parley.Brand{}},
		{"Segment", parley.Segment{Criteria: []parley.SegmentCriterion{{}}}, parley.Segment{}},
		{"SegmentCriterion", parley.SegmentCriterion{}, parley.SegmentCriterion{}},
		{"SegmentAttribute", parley.SegmentAttribute{}, parley.SegmentAttribute{}},
		{"CustomField", parley.CustomField{}, parley.CustomField{}},
		{"Webhook", parley.Webhook{Secret: "whsec_x"}, parley.Webhook{}},
		{"WebhookPage", listPage[*parley.Webhook]{}, listPage[*parley.Webhook]{}},
		{"WebhookDelivery", parley.WebhookDelivery{}, parley.WebhookDelivery{}},
		{"WebhookDeliveryPage", listPage[*parley.WebhookDelivery]{}, listPage[*parley.WebhookDelivery]{}},
		{"Event", parley.Event{}, parley.Event{}},
		{"Import", parley.Import{}, parley.Import{}},
		{"ImportPage", listPage[*parley.Import]{}, listPage[*parley.Import]{}},
		{"UserPage", listPage[*parley.User]{}, listPage[*parley.User]{}},
		{"SegmentCount", parley.SegmentCount{}, parley.SegmentCount{}},
		{"SegmentPreview", parley.SegmentPreview{}, parley.SegmentPreview{}},
		{"Campaign", parley.Campaign{}, parley.Campaign{}},
		{"CampaignStats", parley.CampaignStats{}, parley.CampaignStats{}},
		{"CampaignPage", listPage[*parley.Campaign]{}, listPage[*parley.Campaign]{}},
		{"Flow", parley.Flow{}, parley.Flow{}},
		{"FlowStats", parley.FlowStats{}, parley.FlowStats{}},
		{"FlowStepStats", parley.FlowStepStats{}, parley.FlowStepStats{}},
		{"FlowPage", listPage[*parley.Flow]{}, listPage[*parley.Flow]{}},
		{"Run", parley.FlowRun{}, parley.FlowRun{}},
		{"RunPage", listPage[*parley.FlowRun]{}, listPage[*parley.FlowRun]{}},
		{"UserEvent", parley.UserEvent{}, parley.UserEvent{}},
		{"Error", errorBody{Detail: errorDetail{Field: "x"}}, errorBody{}},
		{"Error/properties/detail", errorDetail{Field: "x"}, errorDetail{}},
	}
	for _, c := range components {
		s, ok := jsonPointer(doc, schemaRef+c.schema)
		if !ok {
			t.Errorf("no schema %s", c.schema)
			continue
		}
		checkMembers(t, doc, c.schema, s, c.full, c.zero)
	}

	// What each handler writes on success (a list: its element).
	type result struct {
		value any
		list  bool
		media string // when not application/json
		zero  any    // what value always encodes, when it sets optional members
	}
	user := result{value: parley.User{}}
	// The Webhook schema lists secret, which only creation and rotation set
	// (webhook_test.go checks the other answers leave it out).
	webhook := result{value: parley.Webhook{Secret: "whsec_x"}, zero: parley.Webhook{}}
	results := map[string]result{
		"GET /healthz":                            {value: map[string]string{"status": "ok"}},
		"GET /readyz":                             {value: map[string]string{"status": "ready"}},
		"GET /metrics":                            {media: "text/plain"},
		"GET /media/{file_id}":                    {media: "*"},
		"GET /api/v1/openapi.json":                {},
		"POST /api/v1/users":                      user,
		"GET /api/v1/users":                       user,
		"GET /api/v1/users/{user_id}":             user,
		"POST /api/v1/users/{user_id}":            user,
		"DELETE /api/v1/users/{user_id}":          user,
		"GET /api/v1/users/{user_id}/history":     {value: listPage[*parley.HistoryEntry]{}},
		"POST /api/v1/messages":                   {value: parley.Message{}},
		"GET /api/v1/messages":                    {value: listPage[*parley.Message]{}},
		"GET /api/v1/messages/{message_id}":       {value: parley.Message{}},
		"POST /api/v1/simulator/inbound":          {value: parley.Message{}},
		"POST /api/v1/files":                      {value: parley.File{}},
		"GET /api/v1/files/{file_id}":             {value: parley.File{}},
		"GET /api/v1/segments":                    {value: parley.Segment{}, list: true},
		"POST /api/v1/segments":                   {value: parley.Segment{}},
		"POST /api/v1/segments/preview":           {value: parley.SegmentPreview{}},
		"GET /api/v1/segments/{segment_id}":       {value: parley.Segment{}},
		"POST /api/v1/segments/{segment_id}":      {value: parley.Segment{}},
		"DELETE /api/v1/segments/{segment_id}":    {value: parley.Segment{}},
		"GET /api/v1/segments/{segment_id}/users": {value: listPage[*parley.User]{}},
		"GET /api/v1/segments/{segment_id}/count": {value: parley.SegmentCount{}},
		"GET /api/v1/custom_data":                 {value: parley.CustomField{}, list: true},
		"GET /api/v1/brand":                       {value: parley.Brand{}},

		"POST /api/v1/campaigns":                      {value: parley.Campaign{}},
		"GET /api/v1/campaigns":                       {value: listPage[*parley.Campaign]{}},
		"GET /api/v1/campaigns/{campaign_id}":         {value: parley.Campaign{}},
		"POST /api/v1/campaigns/{campaign_id}/cancel": {value: parley.Campaign{}},
		"POST /api/v1/campaigns/{campaign_id}":        {value: parley.Campaign{}},
		"POST /api/v1/campaigns/{campaign_id}/test":   {value: parley.Message{}},

		"POST /api/v1/webhooks":                                             webhook,
		"GET /api/v1/webhooks":                                              {value: listPage[*parley.Webhook]{}},
		"GET /api/v1/webhooks/{webhook_id}":                                 webhook,
		"POST /api/v1/webhooks/{webhook_id}":                                webhook,
		"DELETE /api/v1/webhooks/{webhook_id}":                              webhook,
		"POST /api/v1/webhooks/{webhook_id}/rotate_secret":                  webhook,
		"GET /api/v1/webhooks/{webhook_id}/deliveries":                      {value: listPage[*parley.WebhookDelivery]{}},
		"POST /api/v1/webhooks/{webhook_id}/test":                           {value: parley.Event{}},
		"POST /api/v1/webhooks/{webhook_id}/deliveries/{delivery_id}/retry": {value: parley.WebhookDelivery{}},

		"POST /api/v1/imports":                   {value: parley.Import{}},
		"GET /api/v1/imports":                    {value: listPage[*parley.Import]{}},
		"GET /api/v1/imports/{import_id}":        {value: parley.Import{}},
		"GET /api/v1/imports/{import_id}/errors": {media: "text/csv"},
		"GET /api/v1/users/export":               {media: "text/csv"},

		"POST /api/v1/flows":               {value: parley.Flow{}},
		"GET /api/v1/flows":                {value: listPage[*parley.Flow]{}},
		"GET /api/v1/flows/{flow_id}":      {value: parley.Flow{}},
		"POST /api/v1/flows/{flow_id}":     {value: parley.Flow{}},
		"DELETE /api/v1/flows/{flow_id}":   {value: parley.Flow{}},
		"GET /api/v1/flows/{flow_id}/runs": {value: listPage[*parley.FlowRun]{}},
		"POST /api/v1/events":              {value: parley.UserEvent{}},
	}
	for _, rt := range testServer().routeTable() {
		if _, ok := results[rt.method+" "+rt.path]; !ok {
			t.Errorf("route %s %s: say in this test what it returns", rt.method, rt.path)
		}
	}
	for _, o := range oaOperations(t, doc) {
		want, ok := results[o.key]
		if !ok {
			continue
		}
		responses, _ := o.op["responses"].(map[string]any)
		code := successCode(o.key)
		r, ok := responses[code]
		if !ok {
			continue // TestOpenAPISecurity reports it
		}
		content, _ := deref(t, doc, r)["content"].(map[string]any)
		switch want.media {
		case "*":
			if d := diff(sortedKeys(content), sortedSlice(media.Accepted())); d != "" {
				t.Errorf("%s: media types differ from the accepted types (D9): %s", o.key, d)
			}
			continue
		case "text/plain", "text/csv":
			if _, ok := content[want.media]; !ok || len(content) != 1 {
				t.Errorf("%s: want %s only, got %v", o.key, want.media, sortedKeys(content))
			}
			continue
		}
		mt, ok := content["application/json"].(map[string]any)
		if !ok || len(content) != 1 {
			t.Errorf("%s: %s is not application/json only", o.key, code)
			continue
		}
		if want.value == nil {
			continue
		}
		s := deref(t, doc, mt["schema"])
		if want.list {
			if s["type"] != "array" {
				t.Errorf("%s: %s is not an array", o.key, code)
				continue
			}
			s = deref(t, doc, s["items"])
		}
		if _, isMap := want.value.(map[string]string); isMap {
			props, _ := s["properties"].(map[string]any)
			if d := diff(sortedKeys(props), encodedKeys(t, want.value)); d != "" {
				t.Errorf("%s: %s", o.key, d)
			}
			continue
		}
		zero := want.zero
		if zero == nil {
			zero = want.value
		}
		checkMembers(t, doc, o.key, s, want.value, zero)
	}
}

func sortedSlice(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return s
}

// TestOpenAPIRequestBodies: the bodies are the decoded Go types' members,
// closed (unknown members are rejected, D4), with the implementation's
// limits and enumerations.
func TestOpenAPIRequestBodies(t *testing.T) {
	doc := openAPIDoc(t)
	bodies := map[string]struct {
		schema   string
		typ      reflect.Type
		required []string // checked by the services, not visible in the types
	}{
		"POST /api/v1/users":                        {"UserCreate", reflect.TypeFor[parley.UserCreate](), []string{"phone_number"}},
		"POST /api/v1/users/{user_id}":              {"UserUpdate", reflect.TypeFor[parley.UserUpdate](), nil},
		"POST /api/v1/messages":                     {"MessageCreate", reflect.TypeFor[parley.MessageCreate](), []string{"user_id"}},
		"POST /api/v1/simulator/inbound":            {"SimulatedInbound", reflect.TypeFor[parley.SimulatedInbound](), []string{"from", "body"}},
		"POST /api/v1/webhooks":                     {"WebhookCreate", reflect.TypeFor[parley.WebhookCreate](), []string{"url", "event_types"}},
		"POST /api/v1/webhooks/{webhook_id}":        {"WebhookUpdate", reflect.TypeFor[parley.WebhookUpdate](), nil},
		"POST /api/v1/segments":                     {"SegmentCreate", reflect.TypeFor[parley.SegmentCreate](), []string{"name"}},
		"POST /api/v1/segments/{segment_id}":        {"SegmentUpdate", reflect.TypeFor[parley.SegmentUpdate](), nil},
		"POST /api/v1/segments/preview":             {"SegmentPreviewRequest", reflect.TypeFor[parley.SegmentPreviewRequest](), nil},
		"POST /api/v1/campaigns":                    {"CampaignCreate", reflect.TypeFor[parley.CampaignCreate](), []string{"name", "segment_id"}},
		"POST /api/v1/campaigns/{campaign_id}":      {"CampaignUpdate", reflect.TypeFor[parley.CampaignCreate](), nil},
		"POST /api/v1/campaigns/{campaign_id}/test": {"CampaignTest", reflect.TypeFor[parley.CampaignTest](), []string{"phone_number"}},
		"POST /api/v1/flows":                        {"FlowCreate", reflect.TypeFor[parley.FlowCreate](), []string{"name", "trigger", "steps"}},
		"POST /api/v1/flows/{flow_id}":              {"FlowUpdate", reflect.TypeFor[parley.FlowUpdate](), nil},
		"POST /api/v1/events":                       {"EventCreate", reflect.TypeFor[parley.EventCreate](), []string{"user_id", "name"}},
	}
	for _, o := range oaOperations(t, doc) {
		rb, has := o.op["requestBody"]
		if o.key == "POST /api/v1/files" || o.key == "POST /api/v1/imports" {
			if !has {
				t.Errorf("%s: no requestBody", o.key)
				continue
			}
			body := deref(t, doc, rb)
			content, _ := body["content"].(map[string]any)
			mt, ok := content["multipart/form-data"].(map[string]any)
			if !ok || len(content) != 1 || body["required"] != true {
				t.Errorf("%s: want a required multipart/form-data body only", o.key)
				continue
			}
			s := deref(t, doc, mt["schema"])
			props, _ := s["properties"].(map[string]any)
			file, _ := props["file"].(map[string]any)
			if file == nil || !slices.Equal(stringSet(s["required"]), []string{"file"}) || file["type"] != "string" {
				t.Errorf("%s: want a required string part named file", o.key)
			}
			continue
		}
		want, ok := bodies[o.key]
		if !has {
			if ok {
				t.Errorf("%s: no requestBody", o.key)
			}
			continue
		}
		if !ok {
			t.Errorf("%s: has a requestBody but its handler reads none", o.key)
			continue
		}
		body := deref(t, doc, rb)
		content, _ := body["content"].(map[string]any)
		mt, ok := content["application/json"].(map[string]any)
		if !ok || len(content) != 1 || body["required"] != true {
			t.Errorf("%s: want a required application/json body only", o.key)
			continue
		}
		if s, _ := mt["schema"].(map[string]any); s["$ref"] != schemaRef+want.schema {
			t.Errorf("%s: body schema %v, want %s", o.key, s["$ref"], want.schema)
		}
		s := deref(t, doc, mt["schema"])
		props, _ := s["properties"].(map[string]any)
		var names []string
		for _, f := range jsonFields(want.typ) {
			names = append(names, f.name)
		}
		sort.Strings(names)
		if d := diff(sortedKeys(props), names); d != "" {
			t.Errorf("%s: %s properties differ from the members %v decodes: %s", o.key, want.schema, want.typ, d)
		}
		if d := diff(stringSet(s["required"]), want.required); d != "" {
			t.Errorf("%s: %s required: %s", o.key, want.schema, d)
		}
		if s["additionalProperties"] != false {
			t.Errorf("%s: %s allows unknown members; decodeJSON rejects them (D4)", o.key, want.schema)
		}
	}

	// Members refused on update exist on create (handlers.go updateNotAllowed).
	create := deref(t, doc, map[string]any{"$ref": schemaRef + "UserCreate"})["properties"].(map[string]any)
	update := deref(t, doc, map[string]any{"$ref": schemaRef + "UserUpdate"})["properties"].(map[string]any)
	for name := range updateNotAllowed {
		if _, ok := update[name]; ok {
			t.Errorf("UserUpdate has %s, which updateUser refuses", name)
		}
		if _, ok := create[name]; !ok {
			t.Errorf("UserCreate lacks %s", name)
		}
	}

	at := func(ptr string) map[string]any {
		v, ok := jsonPointer(doc, schemaRef+ptr)
		if !ok {
			t.Fatalf("no %s", ptr)
		}
		return deref(t, doc, v)
	}
	// Case-insensitive enumerations are patterns; they must accept every
	// value in any case and nothing else.
	for ptr, values := range map[string][]string{
		"UserCreate/properties/channel":  parley.Channels,
		"MessageCreate/properties/type":  {parley.TypeConversational, parley.TypeMarketing, parley.TypeTransactional},
		"CampaignCreate/properties/type": {parley.TypeMarketing, parley.TypeTransactional},
	} {
		pat, _ := at(ptr)["pattern"].(string)
		re, err := regexp.Compile(pat)
		if err != nil {
			t.Errorf("%s: pattern %q: %v", ptr, pat, err)
			continue
		}
		for _, v := range values {
			for _, s := range []string{v, strings.ToLower(v), strings.ToUpper(v[:1]) + strings.ToLower(v[1:])} {
				if !re.MatchString(s) {
					t.Errorf("%s: pattern rejects %q", ptr, s)
				}
			}
			if re.MatchString(v+"X") || re.MatchString(" "+v) {
				t.Errorf("%s: pattern is not anchored", ptr)
			}
		}
	}
	if d := diff(stringSet(at("Message/properties/type")["enum"]),
		sortedSlice([]string{parley.TypeConversational, parley.TypeMarketing, parley.TypeTransactional})); d != "" {
		t.Errorf("Message.type enum: %s", d)
	}
	if d := diff(stringSet(at("Message/properties/status")["enum"]), sortedSlice([]string{parley.StatusQueued,
		parley.StatusSent, parley.StatusDelivered, parley.StatusFailed, parley.StatusUndelivered})); d != "" {
		t.Errorf("Message.status enum: %s", d)
	}
	if d := diff(stringSet(at("Message/properties/direction")["enum"]),
		sortedSlice([]string{parley.DirectionInbound, parley.DirectionOutbound})); d != "" {
		t.Errorf("Message.direction enum: %s", d)
	}
	if d := diff(stringSet(at("File/properties/mime_type")["enum"]), sortedSlice(media.Accepted())); d != "" {
		t.Errorf("File.mime_type enum differs from the accepted types (D9): %s", d)
	}
	var customTypes []string
	for _, c := range []int{parley.CustomInteger, parley.CustomFloat, parley.CustomString, parley.CustomList,
		parley.CustomBoolean, parley.CustomDate} {
		customTypes = append(customTypes, strconv.Itoa(c))
	}
	sort.Strings(customTypes)
	if d := diff(stringSet(at("CustomField/properties/custom_data_type")["enum"]), customTypes); d != "" {
		t.Errorf("CustomField.custom_data_type enum: %s", d)
	}
	// Webhooks (D11): subscriptions take the catalogue or "*"; events also
	// carry webhook.test, which only POST /webhooks/{id}/test sends.
	subscribable := sortedSlice(append(slices.Clone(parley.EventTypes), "*"))
	for _, ptr := range []string{"WebhookCreate", "WebhookUpdate", "Webhook"} {
		if d := diff(stringSet(at(ptr + "/properties/event_types/items")["enum"]), subscribable); d != "" {
			t.Errorf("%s.event_types items enum differs from parley.EventTypes + \"*\": %s", ptr, d)
		}
		if v := at(ptr + "/properties/url")["maxLength"]; v != float64(webhook.MaxURLLength) {
			t.Errorf("%s.url maxLength = %v, want %d", ptr, v, webhook.MaxURLLength)
		}
		if v := at(ptr + "/properties/description")["maxLength"]; v != 500.0 {
			t.Errorf("%s.description maxLength = %v, want 500", ptr, v)
		}
	}
	delivered := sortedSlice(append(slices.Clone(parley.EventTypes), parley.EventWebhookTest))
	for _, ptr := range []string{"Event/properties/type", "WebhookDelivery/properties/event_type"} {
		if d := diff(stringSet(at(ptr)["enum"]), delivered); d != "" {
			t.Errorf("%s enum differs from parley.EventTypes + webhook.test: %s", ptr, d)
		}
	}
	if d := diff(stringSet(at("WebhookDelivery/properties/outcome")["enum"]),
		[]string{"delivered", "disabled", "failed", "retrying"}); d != "" {
		t.Errorf("WebhookDelivery.outcome enum: %s", d)
	}
	if v := at("WebhookPage/properties/data")["maxItems"]; v != float64(parley.MaxWebhooks) {
		t.Errorf("WebhookPage.data maxItems = %v, want %d", v, parley.MaxWebhooks)
	}
	// Segments (D14, D15): the types, limits and read-only members the
	// service and handlers enforce.
	segTypes := sortedSlice([]string{parley.SegmentStandard, parley.SegmentPointInTime})
	for _, ptr := range []string{"Segment", "SegmentCreate", "SegmentUpdate"} {
		if d := diff(stringSet(at(ptr + "/properties/type")["enum"]), segTypes); d != "" {
			t.Errorf("%s.type enum: %s", ptr, d)
		}
	}
	for _, ptr := range []string{"SegmentCreate", "SegmentUpdate"} {
		if v := at(ptr + "/properties/name")["maxLength"]; v != float64(parley.MaxSegmentName) {
			t.Errorf("%s.name maxLength = %v, want %d", ptr, v, parley.MaxSegmentName)
		}
		if v := at(ptr + "/properties/description")["maxLength"]; v != float64(parley.MaxSegmentDescription) {
			t.Errorf("%s.description maxLength = %v, want %d", ptr, v, parley.MaxSegmentDescription)
		}
		props := at(ptr)["properties"].(map[string]any)
		for name := range segmentReadOnly {
			if _, ok := props[name]; ok {
				t.Errorf("%s has %s, which the handlers refuse", ptr, name)
			}
		}
	}
	for _, ptr := range []string{"SegmentCreate", "SegmentUpdate", "SegmentPreviewRequest"} {
		if v := at(ptr + "/properties/criteria")["maxItems"]; v != float64(parley.MaxCriteria) {
			t.Errorf("%s.criteria maxItems = %v, want %d", ptr, v, parley.MaxCriteria)
		}
	}
	if v := at("SegmentPreview/properties/sample")["maxItems"]; v != float64(parley.PreviewSampleSize) {
		t.Errorf("SegmentPreview.sample maxItems = %v, want %d", v, parley.PreviewSampleSize)
	}
	// Campaigns (D16): the limits and enumerations service/campaign.go
	// enforces, and no member the handler refuses as set by the server.
	for ptr, limit := range map[string]int{"CampaignCreate/properties/name": parley.MaxCampaignName,
		"Campaign/properties/name": parley.MaxCampaignName, "CampaignCreate/properties/body": parley.MaxMessageBody} {
		if v := at(ptr)["maxLength"]; v != float64(limit) {
			t.Errorf("%s maxLength = %v, want %d", ptr, v, limit)
		}
	}
	if v := at("CampaignCreate/properties/media_item_uuids")["maxItems"]; v != float64(parley.MaxMediaItems) {
		t.Errorf("CampaignCreate.media_item_uuids maxItems = %v, want %d", v, parley.MaxMediaItems)
	}
	if d := diff(stringSet(at("Campaign/properties/type")["enum"]),
		sortedSlice([]string{parley.TypeMarketing, parley.TypeTransactional})); d != "" {
		t.Errorf("Campaign.type enum: %s", d)
	}
	if d := diff(stringSet(at("Campaign/properties/status")["enum"]), sortedSlice([]string{parley.CampaignScheduled,
		parley.CampaignSending, parley.CampaignCompleted, parley.CampaignCanceled})); d != "" {
		t.Errorf("Campaign.status enum: %s", d)
	}
	for name := range campaignReadOnly {
		if _, ok := at("CampaignCreate")["properties"].(map[string]any)[name]; ok {
			t.Errorf("CampaignCreate has %s, which createCampaign refuses", name)
		}
	}
	if v := at("MessageCreate/properties/body")["maxLength"]; v != float64(parley.MaxMessageBody) {
		t.Errorf("MessageCreate.body maxLength = %v, want %d", v, parley.MaxMessageBody)
	}
	if v := at("MessageCreate/properties/media_item_uuids")["maxItems"]; v != float64(parley.MaxMediaItems) {
		t.Errorf("MessageCreate.media_item_uuids maxItems = %v, want %d", v, parley.MaxMediaItems)
	}
	for _, ptr := range []string{"UserCreate", "UserUpdate"} {
		for name, limit := range map[string]float64{"first_name": 50, "last_name": 50, "email_address": 50} {
			if v := at(ptr + "/properties/" + name)["maxLength"]; v != limit {
				t.Errorf("%s.%s maxLength = %v, want %v", ptr, name, v, limit)
			}
		}
	}
	if v := at("UserCreate/properties/phone_number")["maxLength"]; v != 20.0 {
		t.Errorf("UserCreate.phone_number maxLength = %v, want 20", v)
	}
}

// TestOpenAPIFlows: a flow's trigger and steps are unions by their type
// (D21): each alternative lists exactly the members the Go types encode for
// that type, the discriminator maps every type, and the limits and
// enumerations are the service's.
func TestOpenAPIFlows(t *testing.T) {
	doc := openAPIDoc(t)
	at := func(ptr string) map[string]any {
		t.Helper()
		v, ok := jsonPointer(doc, schemaRef+ptr)
		if !ok {
			t.Fatalf("no %s", ptr)
		}
		return deref(t, doc, v)
	}
	off, k, replied, event := 0, 2, true, "order_placed"
	unions := map[string]map[string]any{
		"FlowTrigger": {
			parley.TriggerSubscribed:     parley.FlowTrigger{Type: parley.TriggerSubscribed},
			parley.TriggerCreated:        parley.FlowTrigger{Type: parley.TriggerCreated},
			parley.TriggerKeyword:        parley.FlowTrigger{Type: parley.TriggerKeyword, Keyword: "JOIN"},
			parley.TriggerSegmentEntered: parley.FlowTrigger{Type: parley.TriggerSegmentEntered, SegmentID: 1},
			parley.TriggerEvent:          parley.FlowTrigger{Type: parley.TriggerEvent, Name: "order_placed"},
			parley.TriggerDate: parley.FlowTrigger{Type: parley.TriggerDate, FieldName: "date_of_birth", OffsetDays: &off,
				Time: "10:00"},
		},
		"FlowStep": {
			parley.StepSend:      parley.FlowStep{Type: parley.StepSend, Body: "Hi", MessageType: parley.TypeMarketing},
			parley.StepWait:      parley.FlowStep{Type: parley.StepWait, Seconds: 60},
			parley.StepWaitUntil: parley.FlowStep{Type: parley.StepWaitUntil, Time: "09:30"},
			parley.StepBranch:    parley.FlowStep{Type: parley.StepBranch, If: &parley.FlowCondition{Replied: &replied}, ElseStep: &k},
		},
	}
	for name, values := range unions {
		u := at(name)
		alts, _ := u["oneOf"].([]any)
		disc, _ := u["discriminator"].(map[string]any)
		mapping, _ := disc["mapping"].(map[string]any)
		if disc["propertyName"] != "type" || len(alts) != len(values) {
			t.Errorf("%s: want a oneOf of %d alternatives with a discriminator on type", name, len(values))
		}
		if d := diff(sortedKeys(mapping), sortedKeys(values)); d != "" {
			t.Errorf("%s: discriminator mapping: %s", name, d)
		}
		for typ, v := range values {
			ref, _ := mapping[typ].(string)
			if !slices.ContainsFunc(alts, func(a any) bool { m, _ := a.(map[string]any); return m["$ref"] == ref }) {
				t.Errorf("%s: %s maps to %q, which is not one of its alternatives", name, typ, ref)
				continue
			}
			s := deref(t, doc, map[string]any{"$ref": ref})
			props, _ := s["properties"].(map[string]any)
			if d := diff(sortedKeys(props), encodedKeys(t, v)); d != "" {
				t.Errorf("%s (%s): properties differ from the members a %s encodes: %s", ref, typ, typ, d)
			}
			if s["additionalProperties"] != false || !slices.Contains(stringSet(s["required"]), "type") {
				t.Errorf("%s: want additionalProperties false and type required", ref)
			}
			if d := diff(stringSet(deref(t, doc, props["type"])["enum"]), []string{typ}); d != "" {
				t.Errorf("%s.type enum: %s", ref, d)
			}
		}
	}
	// A branch's condition: exactly one of its members (decodeCondition).
	cond := at("FlowCondition")
	props, _ := cond["properties"].(map[string]any)
	full := parley.FlowCondition{Criteria: &parley.Criteria{}, Replied: &replied, Event: &event}
	if d := diff(sortedKeys(props), encodedKeys(t, full)); d != "" {
		t.Errorf("FlowCondition: properties differ from the members it encodes: %s", d)
	}
	if alts, _ := cond["oneOf"].([]any); len(alts) != 3 || cond["additionalProperties"] != false {
		t.Errorf("FlowCondition: want additionalProperties false and a oneOf of the three members")
	}
	if !slices.Contains(refsIn(props["criteria"]), schemaRef+"SegmentCriterion") {
		t.Error("FlowCondition.criteria does not refer to SegmentCriterion (D14)")
	}

	for ptr, want := range map[string]float64{
		"FlowCreate/properties/name/maxLength":              parley.MaxFlowName,
		"FlowUpdate/properties/name/maxLength":              parley.MaxFlowName,
		"Flow/properties/name/maxLength":                    parley.MaxFlowName,
		"FlowCreate/properties/steps/maxItems":              parley.MaxFlowSteps,
		"FlowUpdate/properties/steps/maxItems":              parley.MaxFlowSteps,
		"FlowCreate/properties/reentry_seconds/maximum":     service.MaxReentrySeconds,
		"FlowUpdate/properties/reentry_seconds/maximum":     service.MaxReentrySeconds,
		"FlowStepWait/properties/seconds/minimum":           1,
		"FlowStepWait/properties/seconds/maximum":           parley.MaxWaitSeconds,
		"FlowTriggerDate/properties/offset_days/minimum":    -parley.MaxDateOffsetDays,
		"FlowTriggerDate/properties/offset_days/maximum":    parley.MaxDateOffsetDays,
		"FlowStepSend/properties/body/maxLength":            parley.MaxMessageBody,
		"FlowStepSend/properties/media_item_uuids/maxItems": parley.MaxMediaItems,
	} {
		dir, key := ptr[:strings.LastIndex(ptr, "/")], ptr[strings.LastIndex(ptr, "/")+1:]
		if got := at(dir)[key]; got != want {
			t.Errorf("%s = %v, want %v", ptr, got, want)
		}
	}
	for _, ptr := range []string{"FlowTriggerEvent/properties/name", "FlowCondition/properties/event",
		"EventCreate/properties/name", "UserEvent/properties/name"} {
		if p := at(ptr)["pattern"]; p != "^[a-z0-9_.]{1,64}$" {
			t.Errorf("%s pattern %v, want the event name rule of D21", ptr, p)
		}
	}
	runStatuses := sortedSlice([]string{parley.RunActive, parley.RunCompleted, parley.RunExited, parley.RunCanceled})
	if d := diff(stringSet(at("Run/properties/status")["enum"]), runStatuses); d != "" {
		t.Errorf("Run.status enum: %s", d)
	}
	params, _ := jsonPointer(doc, "#/paths/~1api~1v1~1flows~1{flow_id}~1runs/get/parameters")
	for _, p := range params.([]any) {
		if pm := deref(t, doc, p); pm["name"] == "status" {
			if d := diff(stringSet(deref(t, doc, pm["schema"])["enum"]), runStatuses); d != "" {
				t.Errorf("GET /flows/{flow_id}/runs status enum: %s", d)
			}
		}
	}
	reasons := sortedSlice([]string{service.ExitBranch, service.ExitStop, service.ExitOptedOut,
		service.ExitContactDeleted, service.ExitFlowDeleted, service.ExitError})
	if d := diff(stringSet(at("RunExitReason")["enum"]), reasons); d != "" {
		t.Errorf("RunExitReason enum: %s", d)
	}
	if !slices.Contains(refsIn(at("Run")["properties"].(map[string]any)["exit_reason"]), schemaRef+"RunExitReason") {
		t.Error("Run.exit_reason does not refer to RunExitReason")
	}
	for _, ptr := range []string{"FlowCreate", "FlowUpdate"} {
		for name := range flowReadOnly {
			if _, ok := at(ptr)["properties"].(map[string]any)[name]; ok {
				t.Errorf("%s has %s, which the handlers refuse", ptr, name)
			}
		}
	}
}

// TestOpenAPIWellFormed checks what an OpenAPI 3.1 validator would, as far
// as it matters here: every $ref resolves, operation ids are unique,
// responses are described, required members exist, patterns compile, tags
// are declared and every response carries X-Request-Id.
func TestOpenAPIWellFormed(t *testing.T) {
	doc := openAPIDoc(t)
	var walk func(v any, at string)
	walk = func(v any, at string) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				if _, ok := jsonPointer(doc, ref); !ok {
					t.Errorf("%s: $ref %q does not resolve", at, ref)
				}
			}
			if ty, ok := v["type"].([]any); ok && !nullablePair(ty) {
				t.Errorf("%s: type %v: generators (oapi-codegen, openapi-generator) take one type, or one and \"null\"; write the alternatives as oneOf", at, ty)
			}
			if pat, ok := v["pattern"].(string); ok {
				if _, err := regexp.Compile(pat); err != nil {
					t.Errorf("%s: pattern %q: %v", at, pat, err)
				}
			}
			if req, ok := v["required"].([]any); ok {
				props, _ := v["properties"].(map[string]any)
				for _, r := range req {
					if _, ok := props[fmt.Sprint(r)]; !ok {
						t.Errorf("%s: required member %v is not a property", at, r)
					}
				}
			}
			for k, x := range v {
				walk(x, at+"/"+k)
			}
		case []any:
			for i, x := range v {
				walk(x, at+"/"+strconv.Itoa(i))
			}
		}
	}
	walk(doc, "#")

	tags := map[string]bool{}
	for _, tg := range doc["tags"].([]any) {
		tags[fmt.Sprint(tg.(map[string]any)["name"])] = true
	}
	ids := map[string]string{}
	status := regexp.MustCompile(`^[1-5](?:[0-9]{2}|XX)$`)
	for _, o := range oaOperations(t, doc) {
		id, _ := o.op["operationId"].(string)
		if id == "" {
			t.Errorf("%s: no operationId", o.key)
		} else if prev, dup := ids[id]; dup {
			t.Errorf("%s: operationId %s also used by %s", o.key, id, prev)
		}
		ids[id] = o.key
		for _, tg := range stringSet(o.op["tags"]) {
			if !tags[tg] {
				t.Errorf("%s: tag %s is not declared", o.key, tg)
			}
		}
		responses, _ := o.op["responses"].(map[string]any)
		if len(responses) == 0 {
			t.Errorf("%s: no responses", o.key)
		}
		for code, r := range responses {
			if code != "default" && !status.MatchString(code) {
				t.Errorf("%s: response key %q", o.key, code)
			}
			rm := deref(t, doc, r)
			if d, _ := rm["description"].(string); d == "" {
				t.Errorf("%s: response %s has no description", o.key, code)
			}
			headers, _ := rm["headers"].(map[string]any)
			if _, ok := headers["X-Request-Id"]; !ok {
				t.Errorf("%s: response %s lacks the X-Request-Id header (set on every response)", o.key, code)
			}
		}
	}
}

// TestOpenAPIWebhooks: each webhooks entry (a request Parley sends to a
// subscriber, D11) is described like an operation: an operationId, its
// security stated (none at the OpenAPI level: the receiver verifies the
// Standard Webhooks signature, whose headers are required parameters), the
// Event body and the answers Parley acts on.
func TestOpenAPIWebhooks(t *testing.T) {
	doc := openAPIDoc(t)
	hooks, _ := doc["webhooks"].(map[string]any)
	if len(hooks) == 0 {
		t.Fatal("no webhooks entries")
	}
	ids := map[string]bool{}
	for _, o := range oaOperations(t, doc) {
		if id, ok := o.op["operationId"].(string); ok {
			ids[id] = true
		}
	}
	for name, v := range hooks {
		item := deref(t, doc, v)
		n := 0
		for _, m := range httpMethods {
			op, ok := item[m].(map[string]any)
			if !ok {
				continue
			}
			n++
			key := "webhooks." + name + "." + m
			id, _ := op["operationId"].(string)
			if id == "" || ids[id] {
				t.Errorf("%s: operationId %q is empty or not unique", key, id)
			}
			ids[id] = true
			if _, ok := op["security"].([]any); !ok {
				t.Errorf("%s: no security array", key)
			}
			headers := map[string]bool{}
			for _, p := range op["parameters"].([]any) {
				pm := deref(t, doc, p)
				if pm["in"] == "header" && pm["required"] == true {
					headers[fmt.Sprint(pm["name"])] = true
				}
			}
			for _, h := range []string{"webhook-id", "webhook-timestamp", "webhook-signature"} {
				if !headers[h] {
					t.Errorf("%s: no required header parameter %s (Standard Webhooks)", key, h)
				}
			}
			body, _ := deref(t, doc, op["requestBody"])["content"].(map[string]any)
			mt, _ := body["application/json"].(map[string]any)
			if s, _ := mt["schema"].(map[string]any); s["$ref"] != schemaRef+"Event" {
				t.Errorf("%s: body is not application/json Event", key)
			}
			responses, _ := op["responses"].(map[string]any)
			for _, code := range []string{"2XX", "410", "default"} {
				if _, ok := responses[code]; !ok {
					t.Errorf("%s: no %s response", key, code)
				}
			}
		}
		if n == 0 {
			t.Errorf("webhooks.%s has no operation", name)
		}
	}
}

// nullablePair reports whether a type array is one type and "null", the
// OpenAPI 3.1 form of a nullable member that code generators understand.
func nullablePair(ty []any) bool {
	return len(ty) == 2 && ty[0] != ty[1] && slices.Contains(ty, any("null"))
}

// TestOpenAPICustomData: custom_data values are strings, numbers or arrays
// (D6), null too on input, written as oneOf alternatives that generators
// turn into a union type (a type array of several stops oapi-codegen).
func TestOpenAPICustomData(t *testing.T) {
	doc := openAPIDoc(t)
	value := schemaRef + "CustomDataValue"
	for ptr, want := range map[string][]string{
		"User/properties/custom_data/additionalProperties": {"array", "number", "string"},
		"CustomDataInput/additionalProperties":             {"array", "null", "number", "string"},
	} {
		s, ok := jsonPointer(doc, schemaRef+ptr)
		if !ok {
			t.Errorf("no %s", ptr)
			continue
		}
		if got := schemaTypes(t, doc, s); !slices.Equal(got, want) {
			t.Errorf("%s: types %v, want %v (D6)", ptr, got, want)
		}
		if !slices.Contains(refsIn(s), value) {
			t.Errorf("%s does not refer to %s", ptr, value)
		}
	}
	v, ok := jsonPointer(doc, value)
	if !ok {
		t.Fatalf("no %s", value)
	}
	alts, _ := deref(t, doc, v)["oneOf"].([]any)
	var types []string
	for _, a := range alts {
		ty, _ := deref(t, doc, a)["type"].(string)
		types = append(types, ty)
	}
	sort.Strings(types)
	if !slices.Equal(types, []string{"array", "number", "string"}) {
		t.Errorf("CustomDataValue: oneOf types %v, want one alternative each for array, number and string", types)
	}
}

// TestOpenAPIServed: the document is served verbatim, without signing.
func TestOpenAPIServed(t *testing.T) {
	rec := httptest.NewRecorder()
	testServer().Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/openapi.json", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Errorf("Content-Type = %q", ct)
	}
	if !bytes.Equal(rec.Body.Bytes(), openAPI) {
		t.Error("served document differs from openapi.json")
	}
	if !json.Valid(rec.Body.Bytes()) {
		t.Error("served document is not valid JSON")
	}
}
