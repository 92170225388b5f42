package parley

// DefaultCountry is a brand's default_country until it sets one (D22).
const DefaultCountry = "US"

// BrandIdentity is the part of a brand's settings that says who it is
// (D22): its name and number, which GET /brand shows and inbound texts are
// routed by, and the country its contacts' national numbers belong to.
type BrandIdentity struct {
	Name        string `json:"name"`
	PhoneNumber string `json:"phone_number"`
	// DefaultCountry is an ISO 3166-1 alpha-2 code: the country of phone
	// numbers an import finds without a leading "+".
	DefaultCountry string `json:"default_country"`
}

// BrandIdentityUpdate changes the members of BrandIdentity that are set.
type BrandIdentityUpdate struct {
	Name           Optional[string] `json:"name,omitzero"`
	PhoneNumber    Optional[string] `json:"phone_number,omitzero"`
	DefaultCountry Optional[string] `json:"default_country,omitzero"`
}
