package service

import (
	"context"
	"encoding/csv"
	"io"
	"strconv"
	"strings"

	"github.com/parleyhq/parley"
)

// WriteRejectedRows implements parley.ImportService: the rejected-rows file
// of D22. Its header is the uploaded one and an errors column (a column
// named errors in the upload, an earlier rejected-rows file, is replaced);
// each rejected row has its cells exactly as uploaded, so that once fixed
// the file imports as it is, and the errors column lists every error of
// the row. The errors are formula-safe, as they quote the file; the cells
// are the uploader's own and are given back untouched.
func (im *Importer) WriteRejectedRows(ctx context.Context, brandID, id int64, w io.Writer) error {
	rec, err := im.s.db.FindImport(ctx, brandID, id)
	if err != nil {
		_, err = im.FindImport(ctx, brandID, id) // the API's not-found error
		return err
	}
	keep := make([]int, 0, len(rec.Columns))
	header := make([]string, 0, len(rec.Columns)+1)
	for i, name := range rec.Columns {
		if !strings.EqualFold(name, parley.ErrorsColumn) {
			keep = append(keep, i)
			header = append(header, name)
		}
	}
	cw := csv.NewWriter(w)
	if rec.Delimiter == ";" {
		cw.Comma = ';'
	}
	cw.Write(append(header, parley.ErrorsColumn))
	var (
		line  int64 = -1
		cells []string
		msgs  []string
	)
	flush := func() error {
		if line < 0 {
			return nil
		}
		out := make([]string, 0, len(header)+1)
		switch {
		case cells == nil: // not valid CSV: nothing to give back but the line
			out = append(out, make([]string, len(header))...)
			msgs[0] = "line " + strconv.FormatInt(line, 10) + " of the file: " + msgs[0]
		case len(cells) != len(rec.Columns): // cells as they were, however many
			out = append(out, cells...)
		default:
			for _, i := range keep {
				out = append(out, cells[i])
			}
		}
		return cw.Write(append(out, parley.FormulaSafe(strings.Join(msgs, "; "))))
	}
	err = im.s.db.EachImportError(ctx, brandID, id, func(e *parley.ImportError) error {
		if e.Line != line {
			if err := flush(); err != nil {
				return err
			}
			line, cells, msgs = e.Line, e.Cells, nil
		}
		msgs = append(msgs, e.Msg)
		return nil
	})
	if err == nil {
		err = flush()
	}
	cw.Flush()
	if err == nil {
		err = cw.Error()
	}
	return err
}
