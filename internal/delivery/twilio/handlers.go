package twilio

import (
	"bytes"
	"encoding/xml"
	"net/http"
	"net/url"
	"strconv"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/delivery"
)

// maxCallbackBody bounds the form body of a callback. Twilio's are a few KiB.
const maxCallbackBody = 1 << 20

// maxInboundMedia bounds how many MediaUrlN parameters are read.
const maxInboundMedia = 50

// SignatureHeader carries Twilio's signature of a callback.
const SignatureHeader = "X-Twilio-Signature"

// statusMap maps Twilio's MessageStatus to Parley's status. Statuses that are
// not listed (queued, accepted, scheduled, sending, canceled, read,
// partially_delivered, receiving, received) are acknowledged and ignored.
var statusMap = map[string]string{
	"sent":        parley.StatusSent,
	"delivered":   parley.StatusDelivered,
	"undelivered": parley.StatusUndelivered,
	"failed":      parley.StatusFailed,
}

// errorText gives a message for the common error codes of status callbacks,
// which usually carry ErrorCode without ErrorMessage.
var errorText = map[string]string{
	"21610": "Attempt to send to unsubscribed recipient",
	"21614": "'To' number is not a valid mobile number",
	"30001": "Queue overflow",
	"30002": "Account suspended",
	"30003": "Unreachable destination handset",
	"30004": "Message blocked",
	"30005": "Unknown destination handset",
	"30006": "Landline or unreachable carrier",
	"30007": "Message filtered by the carrier",
	"30008": "Unknown error",
	"30009": "Missing inbound segment",
	"30010": "Message price exceeds max price",
	"30034": "Message from an unregistered number",
}

// StatusHandler serves PublicURL + StatusPath, where Twilio reports status
// changes of the messages Send created. A request without a valid
// X-Twilio-Signature gets 403 and never reaches sink. MessageStatus sent,
// delivered, undelivered and failed become a delivery.StatusUpdate (with
// ErrorCode/ErrorMessage for the last two, and Unsubscribed for error 21610)
// passed to sink.ApplyStatus; other statuses are acknowledged and ignored.
// Answers 204, or 500 when the sink fails so that Twilio retries.
func (p *Provider) StatusHandler(sink delivery.Sink) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		form, ok := p.verify(w, r)
		if !ok {
			return
		}
		sid := form.Get("MessageSid")
		if sid == "" {
			sid = form.Get("SmsSid")
		}
		twStatus := form.Get("MessageStatus")
		if twStatus == "" {
			twStatus = form.Get("SmsStatus")
		}
		if sid == "" || twStatus == "" {
			http.Error(w, "MessageSid and MessageStatus are required", http.StatusBadRequest)
			return
		}
		status, known := statusMap[twStatus]
		if !known {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		u := delivery.StatusUpdate{
			ProviderID: sid,
			Status:     status,
			At:         p.now().UTC(),
		}
		if id, err := strconv.ParseInt(r.URL.Query().Get("message_id"), 10, 64); err == nil && id > 0 {
			u.MessageID = id
		}
		code := form.Get("ErrorCode")
		if code == "0" {
			code = ""
		}
		if status == parley.StatusUndelivered || status == parley.StatusFailed {
			u.ErrorCode = code
			u.ErrorMessage = form.Get("ErrorMessage")
			if u.ErrorMessage == "" {
				u.ErrorMessage = errorText[code]
			}
		}
		u.Unsubscribed = code == strconv.Itoa(ErrorUnsubscribed)
		if err := sink.ApplyStatus(r.Context(), u); err != nil {
			p.logger.ErrorContext(r.Context(), "twilio status callback: sink failed",
				"message_sid", sid, "status", twStatus, "err", err)
			http.Error(w, "internal error", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

// InboundHandler serves PublicURL + InboundPath, the messaging webhook of the
// brand numbers. A request without a valid X-Twilio-Signature gets 403 and
// never reaches sink. From, To, Body, MessageSid and MediaUrl0…MediaUrlN
// become a delivery.Inbound passed to sink.ReceiveInbound, and the reply it
// returns is answered as TwiML (<Response><Message>…</Message></Response>,
// or an empty <Response/> when the reply is ""). Answers 500 when the sink
// fails.
func (p *Provider) InboundHandler(sink delivery.Sink) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		form, ok := p.verify(w, r)
		if !ok {
			return
		}
		in := delivery.Inbound{
			ProviderID: form.Get("MessageSid"),
			From:       form.Get("From"),
			To:         form.Get("To"),
			Body:       form.Get("Body"),
			MediaURLs:  mediaURLs(form),
			At:         p.now().UTC(),
		}
		if in.ProviderID == "" {
			in.ProviderID = form.Get("SmsMessageSid")
		}
		if in.ProviderID == "" || in.From == "" || in.To == "" {
			http.Error(w, "MessageSid, From and To are required", http.StatusBadRequest)
			return
		}
		reply, err := sink.ReceiveInbound(r.Context(), in)
		if err != nil {
			p.logger.ErrorContext(r.Context(), "twilio inbound: sink failed",
				"message_sid", in.ProviderID, "err", err)
			http.Error(w, "internal error", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/xml; charset=utf-8")
		_, _ = w.Write(TwiML(reply))
	})
}

// TwiML is the messaging response that sends reply back to the sender, or
// sends nothing when reply is "".
func TwiML(reply string) []byte {
	var b bytes.Buffer
	b.WriteString(xml.Header[:len(xml.Header)-1]) // without the newline
	if reply == "" {
		b.WriteString("<Response/>")
		return b.Bytes()
	}
	b.WriteString("<Response><Message>")
	_ = xml.EscapeText(&b, []byte(reply))
	b.WriteString("</Message></Response>")
	return b.Bytes()
}

// mediaURLs reads MediaUrl0…MediaUrl{NumMedia-1}; without a usable NumMedia
// it reads them until the first one missing.
func mediaURLs(form url.Values) []string {
	n, err := strconv.Atoi(form.Get("NumMedia"))
	if err != nil || n < 0 || n > maxInboundMedia {
		n = maxInboundMedia
	}
	var urls []string
	for i := range n {
		u := form.Get("MediaUrl" + strconv.Itoa(i))
		if u == "" {
			break
		}
		urls = append(urls, u)
	}
	return urls
}

// verify parses the callback and checks its X-Twilio-Signature: HMAC-SHA1,
// keyed with the auth token, of the URL Twilio called followed by the POST
// parameters sorted by name, each as name+value. That URL is taken to be
// PublicURL + the request URI. On failure verify has answered (405, 400 or
// 403) and returns false.
func (p *Provider) verify(w http.ResponseWriter, r *http.Request) (url.Values, bool) {
	if r.Method != http.MethodPost && r.Method != http.MethodGet {
		w.Header().Set("Allow", "GET, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return nil, false
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxCallbackBody)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "unreadable form", http.StatusBadRequest)
		return nil, false
	}
	params := make(map[string]string, len(r.PostForm))
	for k, v := range r.PostForm {
		params[k] = v[0] // as twilio-go's ValidateBody
	}
	callURL := p.publicURL + r.URL.RequestURI()
	sig := r.Header.Get(SignatureHeader)
	if sig == "" || !p.validator.Validate(callURL, params, sig) {
		p.logger.WarnContext(r.Context(), "twilio callback refused: bad signature",
			"url", callURL, "remote_addr", r.RemoteAddr, "signature_present", sig != "")
		forbidden(w)
		return nil, false
	}
	return r.Form, true
}

// forbidden answers 403 with Parley's error envelope.
func forbidden(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusForbidden)
	_, _ = w.Write([]byte(`{"detail":{"type":"` + parley.ENotAuthenticated +
		`","msg":"Twilio signature verification failed"}}`))
}
