// Package webhook holds the building blocks of outbound webhook delivery
// (D11): Standard Webhooks signing, endpoint URL validation, an SSRF-guarded
// HTTP client, a single delivery attempt and the retry schedule.
//
// Signing follows https://www.standardwebhooks.com: every request carries
// webhook-id, webhook-timestamp (Unix seconds) and webhook-signature
// ("v1,<base64 HMAC-SHA256 of id.timestamp.body>", several space-separated
// during secret rotation), so any Standard Webhooks library verifies it.
//
// The SSRF guard lives in the dialer: the address is checked with IsPublic
// after DNS resolution, immediately before connect, so a hostname that
// resolves (or re-resolves) to a loopback, private, link-local, metadata or
// otherwise non-public address is refused unless private addresses are
// explicitly allowed (--webhook-allow-private, for development and tests).
// CheckURL is only the early, user-facing half of that check.
package webhook
