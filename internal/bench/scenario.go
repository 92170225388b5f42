package bench

import (
	"strconv"
)

// Scenario names.
const (
	ScenarioCreateUsers = "create-users" // POST /users, a new number each time
	ScenarioLookup      = "lookup"       // GET /users?phone_number= over the seeded users
	ScenarioUpdate      = "update"       // POST /users/{id}, a new first name each time
	ScenarioSend        = "send"         // POST /messages to seeded users (consent true)
	ScenarioMixed       = "mixed"        // 70 % reads, 25 % writes, 5 % sends
	ScenarioCeiling     = "ceiling"      // GET on a trivial net/http handler: the machine's HTTP ceiling
)

// Scenarios lists every scenario.
var Scenarios = []string{ScenarioCreateUsers, ScenarioLookup, ScenarioUpdate, ScenarioSend, ScenarioMixed, ScenarioCeiling, ScenarioCampaign, ScenarioFlows, ScenarioIdle}

// Seeded reports whether the scenario needs users created before the run.
func Seeded(scenario string) bool {
	return scenario != ScenarioCreateUsers && scenario != ScenarioCeiling
}

// op is one kind of request.
type op int

const (
	opCreate op = iota
	opLookup
	opGet
	opUpdate
	opSend
	opPing
	opSeed // a create with consent, before the run
)

var opNames = [...]string{"create", "lookup", "get", "update", "send", "ping", "seed"}

func (o op) String() string { return opNames[o] }

// pick chooses the next request of the scenario. The mix: reads 70 %
// (lookup by phone 50, by id 20), writes 25 % (create 10, update 15),
// sends 5 %.
func (w *worker) pick() op {
	switch w.r.o.Scenario {
	case ScenarioCreateUsers:
		return opCreate
	case ScenarioLookup:
		return opLookup
	case ScenarioUpdate:
		return opUpdate
	case ScenarioSend:
		return opSend
	case ScenarioCeiling:
		return opPing
	}
	switch n := w.rng.IntN(100); {
	case n < 50:
		return opLookup
	case n < 70:
		return opGet
	case n < 80:
		return opCreate
	case n < 95:
		return opUpdate
	default:
		return opSend
	}
}

const (
	pathUsers    = "/api/v1/users"
	pathMessages = "/api/v1/messages"
	pathPing     = "/ping"
)

// seed is a user created before the run, with its request targets built
// once so reads cost no formatting.
type seed struct {
	id           int64
	userPath     string // /api/v1/users/{id}
	lookupTarget string // /api/v1/users?phone_number=%2B1…
}

func newSeed(id int64, phone string) seed {
	return seed{id: id, userPath: pathUsers + "/" + strconv.FormatInt(id, 10),
		lookupTarget: pathUsers + "?phone_number=%2B" + phone[1:]}
}

// prepare sets w's request for o. Every write gets a body no other request
// of the run has (a new number, a counter in the name or text), because
// the server refuses a write whose signature it has already accepted
// (replay protection), and the signature covers the body's digest.
// index is the seed's number for opSeed.
func (w *worker) prepare(o op, index uint64) {
	r := w.r
	b := w.body[:0]
	switch o {
	case opCreate, opSeed:
		if o == opCreate {
			index = uint64(len(r.seeds)) + r.created.Add(1) - 1
		}
		b = append(b, `{"phone_number":"`...)
		b = r.numbers.appendNumber(b, index)
		b = append(b, `","first_name":"Bench","postal_code":"10001"`...)
		switch {
		case o == opCreate && r.o.History:
			b = append(b, `,"messaging_consent":true,"custom_data":{"tier":"gold"}`...)
		case o == opSeed:
			b = append(b, `,"messaging_consent":true`...)
		}
		b = append(b, '}')
		w.set("POST", pathUsers)
	case opLookup:
		s := &r.seeds[w.rng.IntN(len(r.seeds))]
		w.set("GET", s.lookupTarget)
	case opGet:
		s := &r.seeds[w.rng.IntN(len(r.seeds))]
		w.set("GET", s.userPath)
	case opUpdate:
		n := r.seq.Add(1)
		s := &r.seeds[n%uint64(len(r.seeds))]
		b = append(b, `{"first_name":"Bench `...)
		b = strconv.AppendUint(b, n, 10)
		b = append(b, `"}`...)
		w.set("POST", s.userPath)
	case opSend:
		n := r.seq.Add(1)
		s := &r.seeds[w.rng.IntN(len(r.seeds))]
		b = append(b, `{"user_id":`...)
		b = strconv.AppendInt(b, s.id, 10)
		b = append(b, `,"body":"Bench message `...)
		b = strconv.AppendUint(b, n, 10)
		b = append(b, `"}`...)
		w.set("POST", pathMessages)
	case opPing:
		w.set("GET", pathPing)
	}
	w.body = b
}
