package bench

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestBucketsCoverEveryValue(t *testing.T) {
	vals := []uint64{0, 1, 127, 128, 129, 255, 256, 1000, 1 << 20, 1<<20 + 1, math.MaxUint64 >> 1, math.MaxUint64}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		vals = append(vals, rng.Uint64()>>rng.IntN(64))
	}
	prevHi := uint64(0)
	for i := range numBuckets {
		lo, hi := bucketRange(i)
		if i > 0 && lo != prevHi+1 {
			t.Fatalf("bucket %d starts at %d, want %d: buckets must tile the values", i, lo, prevHi+1)
		}
		prevHi = hi
	}
	if prevHi != math.MaxUint64 {
		t.Fatalf("the last bucket ends at %d", prevHi)
	}
	for _, v := range vals {
		i := bucketOf(v)
		lo, hi := bucketRange(i)
		if v < lo || v > hi {
			t.Fatalf("%d is in bucket %d = [%d, %d]", v, i, lo, hi)
		}
		if v >= subCount && float64(hi-lo+1)/float64(lo) > 1.0/halfSub {
			t.Fatalf("bucket of %d is %d wide: more than 1/%d of its values", v, hi-lo+1, halfSub)
		}
	}
}

func TestQuantileSmallValuesAreExact(t *testing.T) {
	var h Histogram
	for v := 100; v >= 1; v-- { // order does not matter
		h.Record(time.Duration(v))
	}
	s := h.Snapshot()
	for q, want := range map[float64]time.Duration{0.01: 1, 0.5: 50, 0.9: 90, 0.99: 99, 0.999: 100, 1: 100} {
		if got := s.Quantile(q); got != want {
			t.Errorf("q%v = %d, want %d (nearest rank)", q, got, want)
		}
	}
	if s.Max != 100 || s.N != 100 || s.Mean() != 50 { // 5050/100, truncated
		t.Errorf("max %d, n %d, mean %d", s.Max, s.N, s.Mean())
	}
	var empty Histogram
	if got := empty.Snapshot().Quantile(0.99); got != 0 {
		t.Errorf("empty histogram p99 = %v", got)
	}
}

// TestQuantileMatchesSortedSamples: against the exact nearest-rank
// percentile of the samples, the error stays within the bucket precision.
func TestQuantileMatchesSortedSamples(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var h Histogram
	samples := make([]time.Duration, 50000)
	for i := range samples {
		// Latency-like: a few hundred µs to a few hundred ms, long tail.
		d := time.Duration(math.Exp(rng.NormFloat64()*1.2+math.Log(2e6))) + 200*time.Microsecond
		samples[i] = d
		h.Record(d)
	}
	slices.Sort(samples)
	s := h.Snapshot()
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
		exact := samples[int(math.Ceil(q*float64(len(samples))))-1]
		got := s.Quantile(q)
		if rel := math.Abs(float64(got-exact)) / float64(exact); rel > 1.0/halfSub {
			t.Errorf("q%v = %v, exact %v: off by %.2f %%", q, got, exact, rel*100)
		}
	}
	if time.Duration(s.Max) != samples[len(samples)-1] {
		t.Errorf("max %v, want %v exactly", time.Duration(s.Max), samples[len(samples)-1])
	}
	if got := s.Quantile(1); got != samples[len(samples)-1] && got > time.Duration(s.Max) {
		t.Errorf("p100 %v above the max", got)
	}
}

func TestSnapshotSince(t *testing.T) {
	var h Histogram
	for range 10 {
		h.Record(time.Millisecond)
	}
	first := h.Snapshot()
	for range 10 {
		h.Record(9 * time.Millisecond)
	}
	d := h.Snapshot().Since(first)
	if d.N != 10 {
		t.Fatalf("interval holds %d values, want 10", d.N)
	}
	if p50 := d.Quantile(0.5); math.Abs(float64(p50-9*time.Millisecond)) > float64(9*time.Millisecond)/halfSub {
		t.Errorf("interval p50 %v, want about 9ms: the earlier values must not count", p50)
	}
}

func TestHistogramConcurrentRecord(t *testing.T) {
	var h Histogram
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				h.Record(time.Duration(g*1000 + i))
			}
		})
	}
	wg.Wait()
	s := h.Snapshot()
	if s.N != 8000 || s.Max != 7999 {
		t.Errorf("n %d max %d, want 8000 and 7999", s.N, s.Max)
	}
}

// TestBucketQuantile: quantiles come from the buckets' growth between two
// scrapes, as the upper bound of the bucket that reaches them.
func TestBucketQuantile(t *testing.T) {
	before := []bucket{{0.1, 5}, {0.5, 5}, {1, 5}}
	after := []bucket{{0.1, 55}, {0.5, 103}, {1, 105}} // 50 ≤ 100 ms, 48 ≤ 500 ms, 2 ≤ 1 s
	for _, c := range []struct{ q, want float64 }{{0.5, 100}, {0.51, 500}, {0.98, 500}, {0.99, 1000}} {
		if got := bucketQuantile(before, after, c.q); got != c.want {
			t.Errorf("q %v = %v ms, want %v", c.q, got, c.want)
		}
	}
	if got := bucketQuantile(after, after, 0.99); got != 0 {
		t.Errorf("no new observations: %v, want 0", got)
	}
}
