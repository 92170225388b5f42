package parley

import "context"

// Brand owns users, messages, media and credentials. Every row in the
// database carries its brand id.
type Brand struct {
	ID          int64  `json:"-"`
	Name        string `json:"name"`
	PhoneNumber string `json:"phone_number"`
	DateCreated Time   `json:"-"`
}

// BrandUpdate changes the members that are not nil; the replies answer
// keywords in inbound messages (D12), "" meaning the default text.
type BrandUpdate struct {
	Name, PhoneNumber, HelpReply, StopReply, StartReply *string
}

// Credential signs a brand's API requests (D2). Secret is the base64url text
// shown once on creation; only that text is the HMAC key. RevokedAt is when
// it stops working: in the future during a rotation's grace period.
// LastUsedAt is when it last signed a request that verified, to within a minute.
type Credential struct {
	Username   string `json:"username"`
	BrandID    int64  `json:"brand_id"`
	Secret     string `json:"secret,omitempty"`
	CreatedAt  Time   `json:"created_at"`
	RevokedAt  *Time  `json:"revoked_at"`
	LastUsedAt *Time  `json:"last_used_at"`
}

// Segment is a saved audience of a brand.
type Segment struct {
	ID                       int64    `json:"id"`
	BrandID                  int64    `json:"brand_id"`
	Name                     string   `json:"name"`
	Source                   string   `json:"source"`
	Type                     string   `json:"type"`
	IsActive                 bool     `json:"is_active"`
	IsArchived               bool     `json:"is_archived"`
	Criteria                 Criteria `json:"criteria"`
	DateCreated              Time     `json:"date_created"`
	DateLastUpdated          Time     `json:"date_last_updated"`
	Description              string   `json:"description"`
	IsPinned                 bool     `json:"is_pinned"`
	ColorID                  int64    `json:"color_id"`
	LTV                      float64  `json:"ltv"`
	AverageOrderValue        float64  `json:"average_order_value"`
	AveragePurchaseFrequency float64  `json:"average_purchase_frequency"`
}

// SegmentCriterion is one condition of a segment. Only the value member
// that applies is set; the others are null (D10).
type SegmentCriterion struct {
	Attribute       SegmentAttribute `json:"attribute"`
	OperatorType    int64            `json:"operator_type"`
	AndGroupNum     int64            `json:"and_group_num"`
	StrFieldValue   *string          `json:"str_field_value"`
	BoolFieldValue  *bool            `json:"bool_field_value"`
	IntFieldValue   *int64           `json:"int_field_value"`
	FloatFieldValue *float64         `json:"float_field_value"`
	DateFieldValue  *string          `json:"date_field_value"`
}

// SegmentAttribute names what a criterion tests.
type SegmentAttribute struct {
	DimensionType int64  `json:"dimension_type"`
	FieldName     string `json:"field_name"`
	FieldType     int64  `json:"field_type"`
}

// Custom data types (spec "Custom data field").
const (
	CustomInteger = 1
	CustomFloat   = 2
	CustomString  = 3
	CustomList    = 4
	CustomBoolean = 5
	CustomDate    = 6
)

// CustomField is a custom data field configured for a brand. Its FieldName
// in snake_case is the key in a user's custom_data (D6).
type CustomField struct {
	ID                  int64    `json:"id"`
	BrandID             int64    `json:"-"`
	FieldName           string   `json:"field_name"`
	CustomDataType      int      `json:"custom_data_type"`
	Description         string   `json:"description"`
	Subtype             int      `json:"subtype"`
	AvailableEnumValues []string `json:"available_enum_values"`
	IncludeInAIPrompt   bool     `json:"include_in_ai_prompt"`
	IncludeUserAnswers  bool     `json:"include_user_answers"`
	IsAppend            bool     `json:"is_append"`
	IsAutoCollected     bool     `json:"is_auto_collected"`
	ExtractionPrompt    string   `json:"extraction_prompt"`
	IsEmphasizeCurrent  bool     `json:"is_emphasize_current"`
	IsEmphasizePersonal bool     `json:"is_emphasize_personal"`
}

// CustomFieldUpdate changes the members of a custom data field that are
// set (admin API, CLI, console). A field's name, type and subtype never
// change: they make its custom_data key and the form of stored values.
type CustomFieldUpdate struct {
	Description         Optional[string]   `json:"description,omitzero"`
	AvailableEnumValues Optional[[]string] `json:"available_enum_values,omitzero"`
	IncludeInAIPrompt   Optional[bool]     `json:"include_in_ai_prompt,omitzero"`
	IncludeUserAnswers  Optional[bool]     `json:"include_user_answers,omitzero"`
	IsAppend            Optional[bool]     `json:"is_append,omitzero"`
	IsAutoCollected     Optional[bool]     `json:"is_auto_collected,omitzero"`
	ExtractionPrompt    Optional[string]   `json:"extraction_prompt,omitzero"`
	IsEmphasizeCurrent  Optional[bool]     `json:"is_emphasize_current,omitzero"`
	IsEmphasizePersonal Optional[bool]     `json:"is_emphasize_personal,omitzero"`
}

// MaxExtractionPrompt bounds a field's extraction_prompt, in characters:
// it is sent with every extraction a model server runs (D20).
const MaxExtractionPrompt = 2000

// Bounds on a field's available_enum_values (issue #31): every value is
// matched against each inbound text the field is auto-collected from, sent
// with each model extraction (D20) and checked on every write (D6).
const (
	MaxEnumValues     = 500
	MaxEnumValueChars = 100
)

// BrandService reads what a brand has configured.
type BrandService interface {
	// FindBrand returns ENotFound for a missing brand.
	FindBrand(ctx context.Context, brandID int64) (*Brand, error)
	// ListSegments returns the active, non-archived segments, ordered by id.
	ListSegments(ctx context.Context, brandID int64) ([]*Segment, error)
	// ListCustomFields returns every custom data field, ordered by id.
	ListCustomFields(ctx context.Context, brandID int64) ([]*CustomField, error)
}

// CredentialSource finds the brand and secret behind a username, for request
// verification. It returns ENotAuthenticated for unknown or revoked names.
type CredentialSource interface {
	CredentialSecret(ctx context.Context, username string) (brandID int64, secret []byte, err error)
	// CredentialUsed notes that a request signed by username verified.
	CredentialUsed(ctx context.Context, username string)
}
