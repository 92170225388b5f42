package webhook_test

import (
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/webhook"
)

func TestNextRetry(t *testing.T) {
	want := []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour}
	for i, w := range want {
		d, ok := webhook.NextRetry(i + 1)
		if !ok || d != w {
			t.Errorf("NextRetry(%d) = %v, %v; want %v, true", i+1, d, ok, w)
		}
	}
	for _, n := range []int{8, 9, 100} {
		if d, ok := webhook.NextRetry(n); ok {
			t.Errorf("NextRetry(%d) = %v, true; want give up", n, d)
		}
	}
	if d, ok := webhook.NextRetry(0); !ok || d != 5*time.Second {
		t.Errorf("NextRetry(0) = %v, %v; want 5s, true", d, ok)
	}
	if webhook.MaxAttempts != 8 {
		t.Errorf("MaxAttempts = %d, want 8", webhook.MaxAttempts)
	}
}
