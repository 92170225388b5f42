package service

import (
	"strings"

	"github.com/parleyhq/parley"
)

// columnSynonyms are the names other tools and spreadsheets give the
// contact fields, squashed (lower case, letters and digits only).
var columnSynonyms = map[string][]string{
	"phone_number": {"phonenumber", "phone", "mobile", "mobilephone", "mobilenumber", "cell", "cellphone", "cellnumber",
		"sms", "smsnumber", "number", "msisdn", "tel", "telephone", "phonee164"},
	"first_name":        {"firstname", "first", "givenname", "fname", "forename"},
	"last_name":         {"lastname", "last", "surname", "familyname", "lname"},
	"email_address":     {"emailaddress", "email", "mail", "emailid"},
	"date_of_birth":     {"dateofbirth", "dob", "birthday", "birthdate", "born"},
	"messaging_consent": {"messagingconsent", "consent", "smsconsent", "optin", "optedin", "subscribed", "smssubscribed", "acceptsmarketing", "acceptssmsmarketing"},
	"postal_code":       {"postalcode", "zip", "zipcode", "postcode", "postal"},
}

// GuessColumn is the contact field a file's column most likely holds,
// for the console's column-mapping step (D22): its own name when it is one
// (custom_<field> included), a common synonym (Mobile, Zip, Email), or a
// custom field's name or key; "" (not imported) otherwise, and for the
// errors column of a rejected-rows file.
func GuessColumn(header string, fields []*parley.CustomField) string {
	if strings.EqualFold(strings.TrimSpace(header), parley.ErrorsColumn) {
		return ""
	}
	if kind, key, ok := resolveColumn(strings.TrimSpace(header)); ok {
		if kind != colCustom {
			return parley.ImportColumns[kind]
		}
		for _, f := range fields {
			if parley.CustomDataKey(f.FieldName) == key {
				return parley.CustomColumnPrefix + key
			}
		}
	}
	s := squash(header)
	for _, col := range parley.ImportColumns {
		for _, syn := range columnSynonyms[col] {
			if s == syn {
				return col
			}
		}
	}
	for _, f := range fields {
		key := parley.CustomDataKey(f.FieldName)
		if s == squash(f.FieldName) || s == squash(key) {
			return parley.CustomColumnPrefix + key
		}
	}
	return ""
}

// squash keeps the ASCII letters and digits of s, in lower case.
func squash(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
			b.WriteByte(c)
		case 'A' <= c && c <= 'Z':
			b.WriteByte(c + 'a' - 'A')
		}
	}
	return b.String()
}
