package store

import (
	"strconv"
	"strings"
)

// idList returns a subquery of the ids as one column, and its one
// argument: a JSON array read by json_each on SQLite, a bigint[] unnested
// on PostgreSQL. One argument whatever the length, so a list of a
// million ids neither builds a million placeholders nor a statement text
// of its own (each length would be planned anew), and nothing of a
// caller's reaches the statement's text.
func (db *DB) idList(ids []int64) (string, any) {
	if db.engine == "postgres" {
		if ids == nil {
			ids = []int64{}
		}
		return `SELECT unnest(?::bigint[])`, ids
	}
	var b strings.Builder
	b.Grow(len(ids)*8 + 2)
	b.WriteByte('[')
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(id, 10))
	}
	b.WriteByte(']')
	return `SELECT value FROM json_each(?)`, b.String()
}
