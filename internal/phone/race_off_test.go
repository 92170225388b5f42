//go:build !race

package phone_test

const raceEnabled = false
