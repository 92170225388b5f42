package parley

import (
	"errors"
	"fmt"
)

// Error codes. They are the `type` member of the API's error envelope, so they
// are part of the public contract (spec "Errors", decisions D3).
const (
	ENotAuthenticated     = "not_authenticated"
	EUserNotFound         = "user_not_found"
	ENotFound             = "not_found"
	ESegmentNotFound      = "segment_not_found"
	EMethodNotAllowed     = "method_not_allowed"
	EDuplicate            = "duplicate_record_found"
	EIdempotencyReused    = "idempotency_key_reused"
	EIdempotencyInUse     = "idempotency_key_in_use"
	EPayloadTooLarge      = "payload_too_large"
	EUnsupportedMediaType = "unsupported_media_type"
	EInvalidPhoneNumber   = "invalid_phone_number"
	EInvalidPostalCode    = "invalid_postal_code"
	EInvalidCustomData    = "invalid_custom_data"
	EInvalidMediaItem     = "invalid_media_item"
	EValidation           = "validation_error"
	EInvalidRequest       = "invalid_request"
	ERateLimited          = "rate_limited"
	EUnavailable          = "service_unavailable"
	EInternal             = "UNCAUGHT_ERROR"
)

// Error is an error the API reports to its caller as is. Any other error is an
// internal failure and is reported as EInternal without its text.
type Error struct {
	Code    string
	Message string
	// Field is the JSON path of the offending member, when there is one.
	Field string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Errorf returns an *Error with the given code and formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// FieldError returns a validation_error whose message names the field and the
// rule, as D3 asks: "first_name: at most 50 characters".
func FieldError(code, field, rule string) *Error {
	return &Error{Code: code, Message: field + ": " + rule, Field: field}
}

// ErrorCode returns the code of err's *Error, EInternal for any other non-nil
// error and "" for nil.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EInternal
}

// ErrorMessage returns the message to show the caller: the *Error's message,
// or a generic text that leaks nothing for any other error.
func ErrorMessage(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "Internal server error"
}

// UserNotFound is the error for an id that names no visible user of the brand.
func UserNotFound(id int64) *Error {
	return Errorf(EUserNotFound, "User with ID [%d] not found.", id)
}

// SegmentNotFound is the error for an id that names no segment of the brand (D15).
func SegmentNotFound(id int64) *Error {
	return Errorf(ESegmentNotFound, "Segment with ID [%d] not found.", id)
}

// The error codes of campaigns (D16) and flows (D21): the `type` of the
// error envelope (D3).
const (
	// ECampaignNotFound: an id that names no campaign of the brand (404).
	ECampaignNotFound = "campaign_not_found"
	// EFlowNotFound: an id that names no flow of the brand (404, D21).
	EFlowNotFound = "flow_not_found"
	// ECampaignNotCancelable: the campaign has completed; there is
	// nothing left to cancel (409).
	ECampaignNotCancelable = "campaign_not_cancelable"
	// ECampaignNotEditable: the campaign has started (sending,
	// completed or canceled); only a scheduled one can be changed (409,
	// issue #32).
	ECampaignNotEditable = "campaign_not_editable"
)

// CampaignNotFound is the error for an id that names no campaign of the
// brand (D16).
func CampaignNotFound(id int64) *Error {
	return Errorf(ECampaignNotFound, "Campaign with ID [%d] not found.", id)
}

// FlowNotFound is the error for an id that names no flow of the brand
// (D21).
func FlowNotFound(id int64) *Error {
	return Errorf(EFlowNotFound, "Flow with ID [%d] not found.", id)
}
