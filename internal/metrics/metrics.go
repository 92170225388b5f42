// Package metrics holds Parley's Prometheus metrics: one registry per
// process with the Go runtime, HTTP requests, the database pools, the
// delivery pipeline and the job queue.
package metrics

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// QueueStats reports the job queue's backlog.
type QueueStats interface {
	// QueueStats returns how many jobs wait to be worked and when the
	// oldest of them was created (zero when none wait).
	QueueStats(ctx context.Context) (waiting int64, oldest time.Time, err error)
	// PendingWebhookDeliveries counts webhook deliveries not yet done.
	PendingWebhookDeliveries(ctx context.Context) (int64, error)
}

// Metrics is the registry and the collectors Parley updates.
type Metrics struct {
	Registry        *prometheus.Registry
	transitions     *prometheus.CounterVec
	providerSeconds *prometheus.HistogramVec
	retries         prometheus.Counter
	timeToSent      prometheus.Histogram
	webhookAttempts *prometheus.HistogramVec
	campaignSent    prometheus.Counter
	campaignBatches prometheus.Counter
	requests        *requests
}

// New registers every collector; queue may be nil.
func New(queue QueueStats) *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_messages_total",
			Help: "Messages that reached each status, counted at the transition.",
		}, []string{"status"}),
		providerSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "parley_provider_request_seconds",
			Help:    "Latency of calls to the SMS provider, by outcome.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"provider", "outcome"}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_delivery_retries_total",
			Help: "Delivery attempts that failed temporarily and will be retried.",
		}),
		requests: newRequests(),
	}
	m.timeToSent = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "parley_message_time_to_sent_seconds",
		Help:    "Time from POST /messages to the provider taking the message: how long messages queue.",
		Buckets: []float64{.025, .05, .1, .25, .5, .75, 1, 2.5, 5, 10, 30, 60, 300},
	})
	m.webhookAttempts = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "parley_webhook_attempt_seconds",
		Help:    "Webhook delivery attempts by outcome (delivered, retrying, failed, disabled) and their latency.",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 15},
	}, []string{"outcome"})
	m.campaignSent = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "parley_campaign_messages_sent_total",
		Help: "Campaign messages handed to the provider (D16).",
	})
	m.campaignBatches = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "parley_campaign_batches_total",
		Help: "Campaign batches whose outcomes were written: one provider call and one transaction each.",
	})
	m.Registry.MustRegister(m.campaignSent, m.campaignBatches)
	m.Registry.MustRegister(m.transitions, m.providerSeconds, m.retries, m.timeToSent, m.webhookAttempts,
		m.requests.total, m.requests.seconds, m.requests.inFlight,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if queue != nil {
		m.Registry.MustRegister(&queueCollector{stats: queue})
	}
	return m
}

// ReplayIndex is a store that may find replayed writes and idempotency
// keys with indexes in the node's memory (SQLite's).
type ReplayIndex interface {
	// IndexedSignatures reports how many signatures the index holds, and
	// whether the store has one.
	IndexedSignatures() (int, bool)
	// IndexedKeys reports how many idempotency keys the index holds, and
	// whether the store has one.
	IndexedKeys() (int, bool)
}

// WatchReplayIndex reports the size of r's indexes, when it has them, as
// parley_replay_signatures_indexed and parley_idempotency_keys_indexed.
func (m *Metrics) WatchReplayIndex(r ReplayIndex) {
	if _, held := r.IndexedSignatures(); held {
		m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "parley_replay_signatures_indexed",
			Help: "Signatures of signed writes the node's replay index holds in memory (SQLite): those of the last --clock-skew plus a minute, about 24 bytes each.",
		}, func() float64 { n, _ := r.IndexedSignatures(); return float64(n) }))
	}
	if _, held := r.IndexedKeys(); held {
		m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "parley_idempotency_keys_indexed",
			Help: "Idempotency keys the node's key index holds in memory (SQLite): those of the last 24 hours, about 100 bytes each.",
		}, func() float64 { n, _ := r.IndexedKeys(); return float64(n) }))
	}
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{})
}

// Transition counts a message reaching status.
func (m *Metrics) Transition(status string) { m.transitions.WithLabelValues(status).Inc() }

// ProviderCall observes one provider call.
func (m *Metrics) ProviderCall(provider, outcome string, d time.Duration) {
	m.providerSeconds.WithLabelValues(provider, outcome).Observe(d.Seconds())
}

// WebhookAttempt observes one webhook delivery attempt.
func (m *Metrics) WebhookAttempt(outcome string, latency time.Duration) {
	m.webhookAttempts.WithLabelValues(outcome).Observe(latency.Seconds())
}

// Sent observes how long a message waited from its creation until the
// provider took it.
func (m *Metrics) Sent(waited time.Duration) { m.timeToSent.Observe(waited.Seconds()) }

// CampaignBatch counts a campaign batch and the messages it sent.
func (m *Metrics) CampaignBatch(sent int) {
	m.campaignBatches.Inc()
	m.campaignSent.Add(float64(sent))
}

// Retry counts a delivery attempt that will be retried.
func (m *Metrics) Retry() { m.retries.Inc() }

var (
	depthDesc = prometheus.NewDesc("parley_queue_jobs_waiting", "Jobs waiting to be worked (available, scheduled or retryable).", nil, nil)
	ageDesc   = prometheus.NewDesc("parley_queue_oldest_job_age_seconds", "Age of the oldest waiting job.", nil, nil)
	hooksDesc = prometheus.NewDesc("parley_webhook_deliveries_pending", "Webhook deliveries waiting or being retried.", nil, nil)
)

// queueCollector reads the backlog at scrape time.
type queueCollector struct{ stats QueueStats }

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- depthDesc
	ch <- ageDesc
	ch <- hooksDesc
}

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	n, oldest, err := c.stats.QueueStats(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(depthDesc, err)
		return
	}
	age := 0.0
	if !oldest.IsZero() {
		age = time.Since(oldest).Seconds()
	}
	ch <- prometheus.MustNewConstMetric(depthDesc, prometheus.GaugeValue, float64(n))
	ch <- prometheus.MustNewConstMetric(ageDesc, prometheus.GaugeValue, age)
	if hooks, err := c.stats.PendingWebhookDeliveries(ctx); err != nil {
		ch <- prometheus.NewInvalidMetric(hooksDesc, err)
	} else {
		ch <- prometheus.MustNewConstMetric(hooksDesc, prometheus.GaugeValue, float64(hooks))
	}
}
