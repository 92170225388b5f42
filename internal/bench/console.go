package bench

import (
	"context"
	"strconv"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/service"
	"github.com/parleyhq/parley/internal/store"
)

// ConsoleSeed is what SeedConsole made: the brand, and a contact whose
// page the console benchmark reads.
type ConsoleSeed struct {
	BrandID   int64
	ContactID int64
	Messages  int
}

// consoleFirst and consoleLast make names that repeat as real ones do:
// each first name is shared by n/len(consoleFirst) contacts.
var (
	consoleFirst = []string{"Ada", "Alan", "Grace", "Edsger", "Barbara", "Donald", "Frances", "John", "Margaret", "Ken",
		"Radia", "Dennis", "Shafi", "Tim", "Hedy", "Linus", "Karen", "Niklaus", "Sophie", "Vint"}
	consoleLast = []string{"Lovelace", "Turing", "Hopper", "Dijkstra", "Liskov", "Knuth", "Allen", "McCarthy", "Hamilton",
		"Thompson", "Perlman", "Ritchie", "Goldwasser", "Berners-Lee", "Lamarr", "Torvalds", "Jones", "Wirth", "Wilson", "Cerf"}
)

// SeedConsole gives a new brand n contacts in bulk, shaped for the
// console's pages (issue #18): names from short lists (so a name prefix
// matches many), an email for half, consent in, out and unknown, a ZIP
// for some, and over the last 7 days an inbound text from every 10th
// contact, answered (sent and delivered) for every other one of those,
// with its conversation in the inbox, a quarter of them resolved.
func SeedConsole(ctx context.Context, db *store.DB, svc *service.Service, n int) (*ConsoleSeed, error) {
	b, err := svc.CreateBrand(ctx, "Console bench", "+14155550100")
	if err != nil {
		return nil, err
	}
	seed := &ConsoleSeed{BrandID: b.ID}
	now := db.Now()
	users := make([]*parley.User, 0, seedBatch)
	var msgs []*parley.Message
	for start := 0; start < n; start += seedBatch {
		users = users[:0]
		for x := start; x < min(start+seedBatch, n); x++ {
			first, last := consoleFirst[x%len(consoleFirst)], consoleLast[(x/len(consoleFirst))%len(consoleLast)]
			u := &parley.User{BrandID: b.ID, PhoneNumber: "+1" + strconv.Itoa(2000000000+x*7),
				FirstName: &first, LastName: &last, CustomData: []byte(`{"tier":"gold"}`)}
			if x%2 == 0 {
				email := "c" + strconv.Itoa(x) + "@example.com"
				u.EmailAddress = &email
			}
			if x%3 != 2 {
				consent := x%3 == 0
				u.MessagingConsent = &consent
			}
			if x%4 == 0 {
				zip, city, st, tz := "94103", "San Francisco", "CA", "America/Los_Angeles"
				u.Location = &parley.Location{PostalCode: &zip, City: &city, StateCode: &st, TimeZone: &tz}
			}
			created := parley.Time{Time: now.Add(-time.Duration(n-x) * time.Second)}
			u.DateCreated, u.DateLastUpdated = created, created
			users = append(users, u)
		}
		err := db.WithTx(ctx, func(tx *store.Tx) error {
			if err := tx.InsertUsers(ctx, users); err != nil {
				return err
			}
			msgs = msgs[:0]
			for i, u := range users {
				x := start + i
				if x%10 != 0 || u.ID == 0 {
					continue
				}
				// Spread over the last 7 days, later for later contacts, so ids
				// grow with time as in real traffic (the dashboard relies on it).
				week := 7 * 24 * time.Hour
				at := parley.Time{Time: now.Add(-week + time.Duration(float64(week)*float64(x)/float64(n)) - time.Hour)}
				msgs = append(msgs, &parley.Message{BrandID: b.ID, UserID: u.ID, Direction: parley.DirectionInbound,
					Status: parley.StatusDelivered, Body: "Where is my order?", MediaItemUUIDs: []string{},
					Type: parley.TypeConversational, DateCreated: at, DateSent: &at, DateDelivered: &at})
				if x%20 == 0 {
					sent := parley.Time{Time: at.Add(time.Minute)}
					msgs = append(msgs, &parley.Message{BrandID: b.ID, UserID: u.ID, Direction: parley.DirectionOutbound,
						Status: parley.StatusDelivered, Body: "It ships today.", MediaItemUUIDs: []string{},
						Type: parley.TypeConversational, DateCreated: sent, DateSent: &sent, DateDelivered: &sent})
				}
			}
			if err := tx.InsertMessages(ctx, msgs); err != nil {
				return err
			}
			// Each who texted has a conversation in the inbox (issue #32);
			// every fourth of them resolved.
			for i, m := range msgs {
				if m.Direction != parley.DirectionInbound {
					continue
				}
				if err := tx.TouchConversation(ctx, b.ID, m.UserID, m.DateCreated.Time, false); err != nil {
					return err
				}
				if i%4 == 0 {
					if err := tx.SetConversationStatus(ctx, b.ID, m.UserID, store.ConversationResolved); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		seed.Messages += len(msgs)
		if seed.ContactID == 0 && len(users) > 0 {
			seed.ContactID = users[0].ID
		}
	}
	// As unkind as a real load: the statistics a bulk import refreshes
	// (the contacts'), no more (issue #34).
	return seed, db.AnalyzeContacts(ctx)
}
