package service

import (
	"context"
	"errors"
	"strconv"
	"unicode/utf8"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/store"
)

// UpdateCustomField changes the members of u that are set on a field of
// the brand and returns the field (#19: the admin API, the CLI and the
// console turn auto-collection on and off and edit its prompt). A bad
// value fails the whole update and changes nothing.
func (s *Service) UpdateCustomField(ctx context.Context, brandID, id int64, u parley.CustomFieldUpdate) (*parley.CustomField, error) {
	var out *parley.CustomField
	err := s.db.WithTx(ctx, func(tx *store.Tx) error {
		f, err := tx.FindCustomField(ctx, brandID, id)
		if err != nil {
			return err
		}
		if err := applyFieldUpdate(f, u); err != nil {
			return err
		}
		if err := checkFieldText(f); err != nil {
			return err
		}
		if u.AvailableEnumValues.Set { // a list stored before the bounds does not block other changes
			if err := checkEnumBounds(f.AvailableEnumValues); err != nil {
				return err
			}
		}
		out = f
		return tx.UpdateCustomField(ctx, f)
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, parley.Errorf(parley.ENotFound, "Custom data field [%d] not found.", id)
	}
	return out, err
}

// applyFieldUpdate sets the members of u that are set on f; null is
// refused: every member of a field has a value (D10).
func applyFieldUpdate(f *parley.CustomField, u parley.CustomFieldUpdate) error {
	for _, m := range []struct {
		name string
		o    parley.Optional[bool]
		dst  *bool
	}{
		{"include_in_ai_prompt", u.IncludeInAIPrompt, &f.IncludeInAIPrompt},
		{"include_user_answers", u.IncludeUserAnswers, &f.IncludeUserAnswers},
		{"is_append", u.IsAppend, &f.IsAppend},
		{"is_auto_collected", u.IsAutoCollected, &f.IsAutoCollected},
		{"is_emphasize_current", u.IsEmphasizeCurrent, &f.IsEmphasizeCurrent},
		{"is_emphasize_personal", u.IsEmphasizePersonal, &f.IsEmphasizePersonal},
	} {
		if m.o.Set && !m.o.Valid {
			return invalid(m.name, "must be true or false")
		}
		if m.o.Set {
			*m.dst = m.o.Value
		}
	}
	for _, m := range []struct {
		name string
		o    parley.Optional[string]
		dst  *string
	}{
		{"description", u.Description, &f.Description},
		{"extraction_prompt", u.ExtractionPrompt, &f.ExtractionPrompt},
	} {
		if m.o.Set && !m.o.Valid {
			return invalid(m.name, `must be a string ("" for none)`)
		}
		if m.o.Set {
			*m.dst = m.o.Value
		}
	}
	if o := u.AvailableEnumValues; o.Set {
		if !o.Valid {
			return invalid("available_enum_values", "must be an array of strings ([] for any value)")
		}
		f.AvailableEnumValues = o.Value
		if f.AvailableEnumValues == nil {
			f.AvailableEnumValues = []string{}
		}
	}
	if f.IsAppend && f.CustomDataType != parley.CustomList {
		return invalid("is_append", "only a LIST field appends")
	}
	return nil
}

// checkEnumBounds bounds the number and the length of enum values, for
// the admin API, the CLI and the console alike (issue #31).
func checkEnumBounds(vs []string) error {
	if n := len(vs); n > parley.MaxEnumValues {
		return invalid("available_enum_values", "at most "+strconv.Itoa(parley.MaxEnumValues)+" values ("+strconv.Itoa(n)+" given)")
	}
	for i, v := range vs {
		if n := utf8.RuneCountInString(v); n > parley.MaxEnumValueChars {
			return invalid("available_enum_values["+strconv.Itoa(i)+"]", "at most "+strconv.Itoa(parley.MaxEnumValueChars)+
				" characters ("+strconv.Itoa(n)+" given)")
		}
	}
	return nil
}

// checkFieldText applies the text rules of a field's members, on create
// and update alike, whether the admin API or the CLI asks: no control
// characters (#15; the description and the prompt may span lines) and a
// prompt of at most parley.MaxExtractionPrompt characters (D20).
func checkFieldText(f *parley.CustomField) error {
	if rule := parley.ControlCharRule(f.FieldName, false); rule != "" {
		return invalid("field_name", rule)
	}
	if rule := parley.ControlCharRule(f.Description, true); rule != "" {
		return invalid("description", rule)
	}
	if rule := parley.ControlCharRule(f.ExtractionPrompt, true); rule != "" {
		return invalid("extraction_prompt", rule)
	}
	if n := utf8.RuneCountInString(f.ExtractionPrompt); n > parley.MaxExtractionPrompt {
		return invalid("extraction_prompt", "at most "+strconv.Itoa(parley.MaxExtractionPrompt)+" characters ("+strconv.Itoa(n)+" given)")
	}
	for i, v := range f.AvailableEnumValues {
		if rule := parley.ControlCharRule(v, false); rule != "" {
			return invalid("available_enum_values["+strconv.Itoa(i)+"]", rule)
		}
	}
	return nil
}
