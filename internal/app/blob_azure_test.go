//go:build azure

package app

func init() { builtWith["azblob"] = true }
