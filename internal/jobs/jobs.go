// Package jobs sets up the durable job queue (River) that carries work out of
// the request path: a change and the jobs it causes commit in one transaction.
package jobs

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
)

// DeliverMessageArgs asks a worker to hand one outbound message to the SMS
// provider.
type DeliverMessageArgs struct {
	MessageID int64 `json:"message_id"`
	BrandID   int64 `json:"brand_id"`
}

// Kind implements river.JobArgs.
func (DeliverMessageArgs) Kind() string { return "deliver_message" }

// Queue is a River client bound to Parley's database.
type Queue struct {
	client *river.Client[*sql.Tx]
}

// driver returns River's driver for the engine. Both take a *sql.DB, so the
// store's *sql.Tx carries jobs on either engine.
func driver(db *sql.DB, engine string) riverdriver.Driver[*sql.Tx] {
	if engine == "postgres" {
		return riverdatabasesql.New(db)
	}
	return riversqlite.New(db)
}

// Open returns an insert-only queue on db (the store's writer pool) for the
// engine ("sqlite" or "postgres"). Workers come with the delivery pipeline.
func Open(db *sql.DB, engine string) (*Queue, error) {
	c, err := river.NewClient(driver(db, engine), &river.Config{})
	if err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	return &Queue{client: c}, nil
}

// Migrate creates or upgrades River's tables.
func Migrate(ctx context.Context, db *sql.DB, engine string) error {
	m, err := rivermigrate.New(driver(db, engine), nil)
	if err != nil {
		return fmt.Errorf("jobs: migrations: %w", err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("jobs: migrate: %w", err)
	}
	return nil
}

// EnqueueDelivery inserts the delivery job of a message inside tx, so it
// exists if and only if the message row commits.
func (q *Queue) EnqueueDelivery(ctx context.Context, tx *sql.Tx, brandID, messageID int64) error {
	_, err := q.client.InsertTx(ctx, tx, DeliverMessageArgs{MessageID: messageID, BrandID: brandID}, &river.InsertOpts{
		MaxAttempts: 10,
	})
	if err != nil {
		return fmt.Errorf("jobs: enqueue delivery: %w", err)
	}
	return nil
}
