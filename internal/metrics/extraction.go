package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Extraction observes auto-collected custom data (D20, #19): how often the
// extractor runs and how long it takes, and what becomes of the values it
// finds.
type Extraction struct {
	attempts *prometheus.CounterVec
	seconds  prometheus.Histogram
	written  prometheus.Counter
	refused  *prometheus.CounterVec
}

// NewExtraction registers the extraction collectors in m's registry.
func NewExtraction(m *Metrics) *Extraction {
	x := &Extraction{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_extractions_total",
			Help: "Extractions by outcome (one per contact and sweep, over its latest text): ok (the extractor ran), error (it could not run, after its own retries; the text is left unread unless the node was stopping), skipped_opted_out (the contact opted out and the brand does not extract then), skipped_over_budget (the openai extractor's daily calls for the brand are spent).",
		}, []string{"outcome"}),
		seconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "parley_extraction_seconds",
			Help:    "Latency of one extractor call (rules or a model server).",
			Buckets: []float64{.0005, .001, .005, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}),
		written: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_extraction_values_written_total",
			Help: "Extracted custom data values written to contacts.",
		}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_extraction_values_refused_total",
			Help: "Extracted values not written, by reason: invalid (fails D6 or names no auto-collected field), superseded (the value was set after the message it came from).",
		}, []string{"reason"}),
	}
	// Every series exists from the start, at 0, so a rate over it works
	// before the first event.
	for _, o := range []string{"ok", "error", "skipped_opted_out", "skipped_over_budget"} {
		x.attempts.WithLabelValues(o)
	}
	for _, r := range []string{"invalid", "superseded"} {
		x.refused.WithLabelValues(r)
	}
	m.Registry.MustRegister(x.attempts, x.seconds, x.written, x.refused)
	return x
}

// Ran counts an extractor call, which failed unless ok, and observes its
// latency.
func (x *Extraction) Ran(ok bool, took time.Duration) {
	outcome := "ok"
	if !ok {
		outcome = "error"
	}
	x.attempts.WithLabelValues(outcome).Inc()
	x.seconds.Observe(took.Seconds())
}

// Skipped counts an extraction that did not call the extractor, for
// reason ("opted_out").
func (x *Extraction) Skipped(reason string) { x.attempts.WithLabelValues("skipped_" + reason).Inc() }

// Written counts values written.
func (x *Extraction) Written(n int) { x.written.Add(float64(n)) }

// Refused counts values dropped for reason.
func (x *Extraction) Refused(reason string, n int) { x.refused.WithLabelValues(reason).Add(float64(n)) }
