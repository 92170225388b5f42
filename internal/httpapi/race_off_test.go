//go:build !race

package httpapi_test

const raceEnabled = false
