//go:build race

package signing_test

const raceEnabled = true
