//go:build race

package phone_test

// raceEnabled: the race detector slows phonenumbers' regexps ~20×, so the
// differential test checks a sample of its corpus.
const raceEnabled = true
