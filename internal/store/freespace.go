package store

// minFreeBytes is the free space below which a SQLite database's
// filesystem counts as still full after a probe write succeeded. A probe
// rewrites one row; once a checkpoint has reset the WAL, SQLite reuses its
// frames, so the probe can succeed on a disk where any write that grows
// the WAL still fails (issue #31 item 15): /readyz went back to 200 and
// held jobs were let go, to fail again.
const minFreeBytes = 1 << 20

// enoughSpace reports whether the filesystem of the SQLite database holds
// at least minFreeBytes free; true where it cannot tell (PostgreSQL, or
// an OS without statfs).
func (db *DB) enoughSpace() bool {
	if db.path == "" {
		return true
	}
	free, ok := freeBytes(db.path)
	return !ok || free >= minFreeBytes
}
