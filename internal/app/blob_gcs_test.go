//go:build gcs

package app

func init() { builtWith["gs"] = true }
