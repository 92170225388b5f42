package service

import (
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/csvimport"
)

// lineSource hands out one line per Read and counts the lines taken.
type lineSource struct {
	lines  []string
	served atomic.Int64
}

func (s *lineSource) Read(p []byte) (int, error) {
	i := int(s.served.Load())
	if i >= len(s.lines) {
		return 0, io.EOF
	}
	s.served.Add(1)
	return copy(p, s.lines[i]), nil
}

// An import's reader reads one batch ahead of the commits, then waits for
// it to be taken (issue #35): an import holds two batches at most. Each
// batch carries the file's offset after its own rows.
func TestReadAheadOneBatch(t *testing.T) {
	const rows, size = 10, 2
	src := &lineSource{lines: make([]string, rows)}
	for i := range src.lines {
		src.lines[i] = "x\n" // one cell against no column: a rejected row, checked without the database
	}
	rr := &rowReader{batchSize: size, rd: csvimport.NewReader(src, ',', 0, 2)}
	next, stop := rr.readAhead(t.Context())
	defer stop()

	first := <-next // the caller commits it now
	deadline := time.Now().Add(10 * time.Second)
	for src.served.Load() < 2*size {
		if time.Now().After(deadline) {
			t.Fatalf("the reader took %d lines in 10 s, want the next batch's %d", src.served.Load(), 2*size)
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // room for a reader that goes on
	if n := src.served.Load(); n > 2*size {
		t.Errorf("while the first batch committed the reader took %d lines, want %d: one batch ahead, no more", n, 2*size)
	}

	got, offset := len(first.rows), first.offset
	for b := range next {
		if b.err != nil {
			t.Fatal(b.err)
		}
		if b.offset < offset {
			t.Errorf("a batch's offset %d is before the one before it (%d)", b.offset, offset)
		}
		got, offset = got+len(b.rows), b.offset
	}
	if got != rows || offset != int64(len(strings.Join(src.lines, ""))) {
		t.Errorf("read %d rows up to offset %d, want %d rows and the whole file", got, offset, rows)
	}
}
