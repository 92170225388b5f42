package audience

import "math/bits"

// bitmap is a set of row positions.
type bitmap []uint64

func newBitmap(n int) bitmap { return make(bitmap, (n+63)/64) }

func (b bitmap) set(i int)      { b[i>>6] |= 1 << (uint(i) & 63) }
func (b bitmap) has(i int) bool { return b[i>>6]&(1<<(uint(i)&63)) != 0 }

// fill sets rows 0 … n−1.
func (b bitmap) fill(n int) {
	for i := range b {
		b[i] = ^uint64(0)
	}
	if r := n & 63; r != 0 {
		b[len(b)-1] = 1<<uint(r) - 1
	}
}

func (b bitmap) and(o bitmap) {
	for i := range b {
		b[i] &= o[i]
	}
}

func (b bitmap) or(o bitmap) {
	for i := range b {
		b[i] |= o[i]
	}
}

// not complements b over rows 0 … n−1.
func (b bitmap) not(n int) {
	for i := range b {
		b[i] = ^b[i]
	}
	if r := n & 63; r != 0 && len(b) > 0 {
		b[len(b)-1] &= 1<<uint(r) - 1
	}
}

func (b bitmap) count() int64 {
	var n int
	for _, w := range b {
		n += bits.OnesCount64(w)
	}
	return int64(n)
}

// next returns the first set row at or after i, or −1.
func (b bitmap) next(i int) int {
	w := i >> 6
	if w >= len(b) {
		return -1
	}
	x := b[w] >> (uint(i) & 63)
	if x != 0 {
		return i + bits.TrailingZeros64(x)
	}
	for w++; w < len(b); w++ {
		if b[w] != 0 {
			return w<<6 + bits.TrailingZeros64(b[w])
		}
	}
	return -1
}

// prev returns the last set row at or before i, or −1.
func (b bitmap) prev(i int) int {
	if i < 0 || len(b) == 0 {
		return -1
	}
	w := i >> 6
	if w >= len(b) {
		w, i = len(b)-1, len(b)<<6-1
	}
	x := b[w] << (63 - uint(i)&63)
	if x != 0 {
		return i - bits.LeadingZeros64(x)
	}
	for w--; w >= 0; w-- {
		if b[w] != 0 {
			return w<<6 + 63 - bits.LeadingZeros64(b[w])
		}
	}
	return -1
}
