package metrics

import (
	"database/sql"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Unmatched is the route label of requests no route matched, so probes of
// random paths add no series.
const Unmatched = "unmatched"

// requests are the HTTP request metrics. The latency histogram leaves the
// status out: it would multiply the histogram's series by every status a
// route answers with, and the counter already splits errors out.
type requests struct {
	total    *prometheus.CounterVec   // route, method, status
	seconds  *prometheus.HistogramVec // route, method
	inFlight prometheus.Gauge

	mu     sync.Mutex // serialises adding a route
	routes atomic.Pointer[map[string]*routeSeries]
}

func newRequests() *requests {
	r := &requests{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_http_requests_total",
			Help: "HTTP requests answered, by route pattern, method and status.",
		}, []string{"route", "method", "status"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "parley_http_request_duration_seconds",
			Help:    "Time to answer HTTP requests, by route pattern and method.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 15},
		}, []string{"route", "method"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "parley_http_requests_in_flight",
			Help: "HTTP requests being answered.",
		}),
	}
	r.routes.Store(&map[string]*routeSeries{})
	return r
}

// routeSeries caches one route's children. A route answers with a handful
// of (method, status) pairs, so a scan of a copy-on-write slice finds them
// without locks, hashing or allocations.
type routeSeries struct {
	route  string
	mu     sync.Mutex // serialises adding a pair
	series atomic.Pointer[[]requestSeries]
}

type requestSeries struct {
	method  string
	status  int
	count   prometheus.Counter
	seconds prometheus.Observer
}

// RequestStarted counts a request in flight until its RequestDone.
func (m *Metrics) RequestStarted() { m.requests.inFlight.Inc() }

// RequestDone observes a finished request. route is the pattern of the
// route that matched, without its method ("/api/v1/users/{user_id}"), or ""
// when none did; it must come from a bounded set, never from the raw path.
func (m *Metrics) RequestDone(route, method string, status int, d time.Duration) {
	r := m.requests
	r.inFlight.Dec()
	method = normMethod(method)
	rs := (*r.routes.Load())[route]
	if rs == nil {
		rs = r.addRoute(route)
	}
	if s := rs.series.Load(); s != nil {
		for i := range *s {
			if e := &(*s)[i]; e.status == status && e.method == method {
				e.count.Inc()
				e.seconds.Observe(d.Seconds())
				return
			}
		}
	}
	e := rs.add(r, method, status)
	e.count.Inc()
	e.seconds.Observe(d.Seconds())
}

func (r *requests) addRoute(route string) *routeSeries {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := *r.routes.Load()
	if rs := old[route]; rs != nil {
		return rs
	}
	label := route
	if label == "" {
		label = Unmatched
	}
	rs := &routeSeries{route: label}
	routes := make(map[string]*routeSeries, len(old)+1)
	for k, v := range old {
		routes[k] = v
	}
	routes[route] = rs
	r.routes.Store(&routes)
	return rs
}

func (rs *routeSeries) add(r *requests, method string, status int) requestSeries {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var old []requestSeries
	if s := rs.series.Load(); s != nil {
		old = *s
	}
	for _, e := range old {
		if e.status == status && e.method == method {
			return e
		}
	}
	method = strings.Clone(method) // kept for good: not a slice of a request's buffer
	e := requestSeries{method: method, status: status,
		count:   r.total.WithLabelValues(rs.route, method, strconv.Itoa(status)),
		seconds: r.seconds.WithLabelValues(rs.route, method)}
	series := append(old[:len(old):len(old)], e)
	rs.series.Store(&series)
	return e
}

// normMethod bounds the method label: clients may send any token.
func normMethod(m string) string {
	switch m {
	case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE":
		return m
	}
	return "OTHER"
}

// AddDBPools reports the statistics of connection pools (go_sql_*), each
// labelled db_name with its key.
func (m *Metrics) AddDBPools(pools map[string]*sql.DB) {
	for name, db := range pools {
		m.Registry.MustRegister(collectors.NewDBStatsCollector(db, name))
	}
}
