package jobs

import (
	"context"
	"database/sql"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivershared/baseservice"
	"github.com/riverqueue/river/rivershared/riverpilot"
	"github.com/riverqueue/river/rivertype"
)

// Waking this process's workers (issue #35: an idle node idles). River's
// database/sql drivers have no listener on either engine, so a worker
// learns of a job by polling every FetchPollInterval; River wakes its own
// producers only for jobs inserted outside a transaction. Parley inserts
// every job in the transaction of the change that causes it, so once that
// commits it wakes this process's producers of the jobs' queues (Wake):
// work this process queues starts at once, and the poll, long, only
// bounds how long work queued by another process waits.
//
// River hands the function that wakes its producers to its pilot; a
// driver that is a plugin supplies the pilot, so wakeDriver wraps the
// engine's driver to supply River's standard pilot, which keeps the
// function.

type wakeDriver struct {
	riverdriver.Driver[*sql.Tx]
	pilot *wakePilot
}

func (d *wakeDriver) PluginInit(*baseservice.Archetype) {}

func (d *wakeDriver) PluginPilot() riverpilot.Pilot { return d.pilot }

type wakePilot struct {
	riverpilot.StandardPilot
	notify func(context.Context, []*rivertype.JobInsertResult)

	// River's Start starts its producers one queue at a time, and a job of
	// a queue already started that woke a producer still being started
	// raced with it (seen by -race in CI). From the start of Queue.Stop to
	// the end of Queue.Start, wakes are kept in pending and made once the
	// start is over.
	mu      sync.Mutex
	started bool
	pending map[string]bool
}

// start makes the wakes kept while the queue was not started.
func (p *wakePilot) start() {
	p.mu.Lock()
	p.started = true
	queues := slices.Collect(maps.Keys(p.pending))
	p.pending = nil
	p.mu.Unlock()
	p.wake(queues)
}

// stop keeps the wakes from now on until start.
func (p *wakePilot) stop() {
	p.mu.Lock()
	p.started = false
	p.mu.Unlock()
}

func (p *wakePilot) PilotInit(archetype *baseservice.Archetype, params *riverpilot.PilotInitParams) {
	p.StandardPilot.PilotInit(archetype, params)
	p.notify = params.NotifyNonTxJobInsert
}

// snoozeWake wakes this process's workers of a job's queue when the job
// it snoozed for a short while is due again: a campaign's sender backing
// off for a second, a webhook endpoint's turn, the extraction sweep's
// next run would otherwise wait for the poll as well. The wake comes a
// little after the due time, once River has recorded the snooze.
type snoozeWake struct {
	river.MiddlewareDefaults
	pilot *wakePilot
}

// snoozeWakeBound is the longest snooze woken for; longer ones (messages
// held for their window) wait for the poll.
const snoozeWakeBound = time.Minute

// snoozeRecorded are the times after a job's snooze is due at which its
// queue is woken: River's batch completer records the snooze within 50 ms
// or so, but a loaded process (or -race) can take seconds, and a wake
// that comes before the record finds nothing and leaves the job to the
// poll. Waking again is one fetch each.
var snoozeRecorded = []time.Duration{100 * time.Millisecond, 500 * time.Millisecond, 2 * time.Second, 5 * time.Second}

func (m *snoozeWake) Work(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) error {
	err := doInner(ctx)
	if s, ok := errors.AsType[*rivertype.JobSnoozeError](err); ok && s.Duration <= snoozeWakeBound {
		queue := job.Queue
		for _, after := range snoozeRecorded {
			time.AfterFunc(max(s.Duration, 0)+after, func() { m.pilot.wake([]string{queue}) })
		}
	}
	return err
}

// Wake makes this process's workers of the queues look for jobs now; a
// queue this process does not work is skipped. Call it once the
// transaction that inserted the jobs has committed: before, the jobs
// cannot be seen.
func (q *Queue) Wake(queues []string) {
	if q.working {
		q.pilot.wake(queues)
	}
}

func (p *wakePilot) wake(queues []string) {
	if p.notify == nil || len(queues) == 0 {
		return
	}
	p.mu.Lock()
	if !p.started {
		if p.pending == nil {
			p.pending = map[string]bool{}
		}
		for _, q := range queues {
			p.pending[q] = true
		}
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	res := make([]*rivertype.JobInsertResult, len(queues))
	for i, name := range queues {
		res[i] = &rivertype.JobInsertResult{Job: &rivertype.JobRow{Queue: name}}
	}
	p.notify(context.Background(), res)
}

// Queues returns the queues of p's jobs, each once.
func (p *Pending) Queues() []string {
	var out []string
	for _, prm := range p.params {
		name := river.QueueDefault
		if a, ok := prm.Args.(river.JobArgsWithInsertOpts); ok {
			if o := a.InsertOpts(); o.Queue != "" {
				name = o.Queue
			}
		}
		if prm.InsertOpts != nil && prm.InsertOpts.Queue != "" {
			name = prm.InsertOpts.Queue
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}
