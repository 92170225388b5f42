package apitest

import (
	"bytes"
	"sync"
)

// LogBuffer is a bytes.Buffer that a server's goroutines and the test
// share: a log sink, or a command's output, read while it runs.
type LogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *LogBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *LogBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
