package openai

import (
	"context"
	"time"
)

// SetSleep replaces the wait between attempts, so tests record the waits
// instead of sleeping them.
func SetSleep(x *Extractor, f func(ctx context.Context, d time.Duration) error) { x.sleep = f }
