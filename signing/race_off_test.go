//go:build !race

package signing_test

// raceEnabled is false: allocation counts can be checked. Under -race,
// sync.Pool drops items at random, so they can't.
const raceEnabled = false
