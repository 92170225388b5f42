package bench

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// The histogram is log-linear: values below subCount are exact, and every
// power of two above is split into halfSub buckets, so a reported value is
// within 1/(2·halfSub) ≈ 0.8 % of the true one. Recording is a few atomic
// adds, with no lock and no allocation, so workers share one histogram and
// the progress line can read it while they run.
const (
	subBits    = 7
	subCount   = 1 << subBits
	halfSub    = subCount / 2
	numBuckets = subCount + (64-subBits)*halfSub
)

func bucketOf(v uint64) int {
	if v < subCount {
		return int(v)
	}
	shift := bits.Len64(v) - subBits
	return subCount + (shift-1)*halfSub + int(v>>shift) - halfSub
}

// bucketRange is the smallest and largest value that fall in bucket i.
func bucketRange(i int) (lo, hi uint64) {
	if i < subCount {
		return uint64(i), uint64(i)
	}
	j := i - subCount
	shift := j/halfSub + 1
	top := uint64(j%halfSub + halfSub)
	return top << shift, (top+1)<<shift - 1
}

// Histogram records latencies in nanoseconds. Safe for concurrent use.
type Histogram struct {
	counts [numBuckets]atomic.Uint64
	n      atomic.Uint64
	sum    atomic.Uint64
	max    atomic.Uint64
}

// Record adds one latency. Negative durations count as zero.
func (h *Histogram) Record(d time.Duration) {
	v := uint64(max(d, 0))
	h.counts[bucketOf(v)].Add(1)
	h.n.Add(1)
	h.sum.Add(v)
	for {
		m := h.max.Load()
		if v <= m || h.max.CompareAndSwap(m, v) {
			return
		}
	}
}

// Snapshot copies the histogram. Values recorded while it copies may be
// counted in some fields and not others; the progress line does not mind,
// and the final report is taken after the workers stop.
func (h *Histogram) Snapshot() *Snapshot {
	s := &Snapshot{N: h.n.Load(), Sum: h.sum.Load(), Max: h.max.Load()}
	for i := range h.counts {
		s.counts[i] = h.counts[i].Load()
	}
	return s
}

// Snapshot is a copy of a Histogram.
type Snapshot struct {
	counts [numBuckets]uint64
	N      uint64 // values recorded
	Sum    uint64 // their total, ns
	Max    uint64 // the largest, ns; exact
}

// Since returns what was recorded after prev: the counts of this interval.
// Its Max is the upper bound of the highest non-empty bucket.
func (s *Snapshot) Since(prev *Snapshot) *Snapshot {
	d := &Snapshot{N: s.N - prev.N, Sum: s.Sum - prev.Sum}
	for i := range s.counts {
		d.counts[i] = s.counts[i] - prev.counts[i]
		if d.counts[i] > 0 {
			_, d.Max = bucketRange(i)
		}
	}
	d.Max = min(d.Max, s.Max)
	return d
}

// Quantile returns the nearest-rank q-quantile (0 < q ≤ 1): the smallest
// recorded value such that at least q of all values are at or below it,
// to within the bucket's width (the bucket's midpoint is reported, never
// more than Max). It is 0 when nothing was recorded.
func (s *Snapshot) Quantile(q float64) time.Duration {
	var n uint64
	for _, c := range s.counts {
		n += c
	}
	if n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(n)))
	rank = min(max(rank, 1), n)
	var seen uint64
	for i, c := range s.counts {
		if seen += c; seen >= rank {
			lo, hi := bucketRange(i)
			return time.Duration(min(lo+(hi-lo)/2, s.Max))
		}
	}
	return time.Duration(s.Max) // not reached
}

// Mean is the average of the recorded values, exact.
func (s *Snapshot) Mean() time.Duration {
	if s.N == 0 {
		return 0
	}
	return time.Duration(s.Sum / s.N)
}
