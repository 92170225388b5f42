package apitest

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// MountTmpfs mounts a tmpfs of size (as mount takes it: "8m") on a new
// directory and unmounts it when the test ends: a filesystem other than
// the one os.TempDir is on, and one that a test can fill. The test skips,
// saying why, where it cannot mount (not root); CI runs as root.
func MountTmpfs(t testing.TB, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tmpfs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput()
	if err != nil {
		t.Skipf("cannot mount a tmpfs (needs root; CI runs as root): %v: %s", err, out)
	}
	t.Cleanup(func() {
		// Lazily: a file the app still holds open must not fail the test.
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// Filler takes up a filesystem's free space with one file, so that writes
// fail with ENOSPC until Free removes it.
type Filler struct{ path string }

// Fill writes a file in dir until the filesystem is full.
func Fill(t testing.TB, dir string) *Filler {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatalf("filler: %v", err)
	}
	buf := make([]byte, 64<<10)
	for {
		if _, err = f.Write(buf); err != nil {
			break
		}
	}
	// What a whole buffer no longer fits in, smaller writes may.
	for len(buf) > 1 && errors.Is(err, syscall.ENOSPC) {
		buf = buf[:len(buf)/2]
		for {
			if _, err = f.Write(buf); err != nil {
				break
			}
		}
	}
	f.Close()
	if !errors.Is(err, syscall.ENOSPC) && !errors.Is(err, io.ErrShortWrite) {
		t.Fatalf("filler: %v, want ENOSPC", err)
	}
	return &Filler{path: path}
}

// Free removes the filler: the space is back.
func (f *Filler) Free(t testing.TB) {
	t.Helper()
	if err := os.Remove(f.path); err != nil {
		t.Fatalf("filler: %v", err)
	}
}
