package audience

import (
	"math/rand/v2"
	"testing"
)

// TestBitmapNextPrev checks next and prev against a row-by-row search,
// prev also from past the last row.
func TestBitmapNextPrev(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 63, 64, 65, 200, 1000} {
		for _, density := range []int{1, 10, 50} {
			b := newBitmap(n)
			for i := range n {
				if r.IntN(100) < density {
					b.set(i)
				}
			}
			for i := -1; i <= 64*len(b)+1; i++ {
				wantNext, wantPrev := -1, -1
				for j := max(i, 0); j < n; j++ {
					if b.has(j) {
						wantNext = j
						break
					}
				}
				for j := min(i, n-1); j >= 0; j-- {
					if b.has(j) {
						wantPrev = j
						break
					}
				}
				if i >= 0 && i < n {
					if got := b.next(i); got != wantNext {
						t.Fatalf("n %d: next(%d) = %d, want %d", n, i, got, wantNext)
					}
				}
				if got := b.prev(i); got != wantPrev {
					t.Fatalf("n %d: prev(%d) = %d, want %d", n, i, got, wantPrev)
				}
			}
		}
	}
}
