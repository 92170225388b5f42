package store

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
)

// MigrationsDigest identifies the schema the migrations of engine
// ("sqlite" or "postgres") build: a hash of their files. Tests name the
// database they migrate once and copy for each test by it.
func MigrationsDigest(engine string) (string, error) {
	h := sha256.New()
	err := fs.WalkDir(migrations, "migrations/"+engine, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := migrations.ReadFile(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %d\n", path, len(b))
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
