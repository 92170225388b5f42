//go:build linux || darwin || freebsd

package store

import "golang.org/x/sys/unix"

// freeBytes returns the bytes an unprivileged process may still write on
// the filesystem holding path.
func freeBytes(path string) (uint64, bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, false
	}
	return uint64(st.Bavail) * uint64(st.Bsize), true
}
