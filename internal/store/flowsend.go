package store

import (
	"context"
	"fmt"
)

// A flow's sender job (D21): one per flow while any of its messages may be
// queued. flow_senders is the handshake between the runners that write a
// flow's messages and its sender (migration 00044).

// WantFlowSender records that the flow has messages to send, and returns
// true when no sender job is queued or running for it: the caller queues
// one in tx. Otherwise it bumps the row's gen, which a sender about to
// finish then sees (EndFlowSender).
func (tx *Tx) WantFlowSender(ctx context.Context, flowID int64) (bool, error) {
	var gen int64
	err := tx.queryRow(ctx, `INSERT INTO flow_senders (flow_id, gen) VALUES (?, 0)
	ON CONFLICT (flow_id) DO UPDATE SET gen = flow_senders.gen + 1 RETURNING gen`, flowID).Scan(&gen)
	if err != nil {
		return false, fmt.Errorf("store: want flow sender: %w", err)
	}
	return gen == 0, nil
}

// FlowSenderGen reads the flow's sender generation (-1 when no row).
func (tx *Tx) FlowSenderGen(ctx context.Context, flowID int64) (int64, error) {
	var gen int64 = -1
	rows, err := tx.query(ctx, `SELECT gen FROM flow_senders WHERE flow_id = ?`, flowID)
	if err != nil {
		return 0, fmt.Errorf("store: flow sender: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := rows.Scan(&gen); err != nil {
			return 0, err
		}
	}
	return gen, rows.Err()
}

// EndFlowSender removes the flow's sender row if its gen is still gen,
// and says whether it did: false means a runner wrote messages since gen
// was read (or is writing them, on PostgreSQL: the delete waits for it),
// and the sender must go on.
func (tx *Tx) EndFlowSender(ctx context.Context, flowID, gen int64) (bool, error) {
	res, err := tx.exec(ctx, `DELETE FROM flow_senders WHERE flow_id = ? AND gen = ?`, flowID, gen)
	if err != nil {
		return false, fmt.Errorf("store: end flow sender: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// FlowsWithoutSender returns flows, with their brands, that may have
// messages to send and no sender job that could still run. The watch
// (queued false) reads flow_senders, a row per flow whose sender was
// wanted, which stays when River discards the job (its attempts ran out
// in a long outage or on an overloaded node): a small table, so every
// node may look often. At start (queued true) it reads the flows with
// queued messages instead (messages_flow_queue: one index walk), which
// also finds those of a version that sent each message by a job of its
// own and wrote no row. River's jobs are read once per flow.
func (db *DB) FlowsWithoutSender(ctx context.Context, queued bool) (map[int64]int64, error) {
	argID := `json_extract(CAST(j.args AS TEXT), '$.flow_id')`
	if db.engine == "postgres" {
		argID = `(j.args->>'flow_id')::bigint`
	}
	from := `SELECT fs.flow_id, f.brand_id FROM flow_senders fs JOIN flows f ON f.id = fs.flow_id`
	if queued {
		from = `SELECT DISTINCT flow_id, brand_id FROM messages WHERE status = 'queued' AND flow_id IS NOT NULL`
	}
	rows, err := db.query(ctx, `SELECT q.flow_id, q.brand_id FROM (`+from+`) q
	WHERE NOT EXISTS (SELECT 1 FROM river_job j WHERE j.kind = 'send_flow'
		AND j.state IN ('available', 'pending', 'retryable', 'running', 'scheduled') AND `+argID+` = q.flow_id)`)
	if err != nil {
		return nil, fmt.Errorf("store: flows without a sender: %w", err)
	}
	defer rows.Close()
	out := map[int64]int64{}
	for rows.Next() {
		var flowID, brandID int64
		if err := rows.Scan(&flowID, &brandID); err != nil {
			return nil, fmt.Errorf("store: flows without a sender: %w", err)
		}
		out[flowID] = brandID
	}
	return out, rows.Err()
}
