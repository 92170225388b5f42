package webhook

import "time"

// MaxAttempts is the number of delivery attempts before a delivery is
// marked failed: the first attempt plus one per entry of the schedule.
const MaxAttempts = 8

var retrySchedule = [MaxAttempts - 1]time.Duration{
	5 * time.Second,
	5 * time.Minute,
	30 * time.Minute,
	2 * time.Hour,
	5 * time.Hour,
	10 * time.Hour,
	10 * time.Hour,
}

// NextRetry returns the delay before attempt n+1 after attempt n (counted
// from 1) failed: 5s, 5m, 30m, 2h, 5h, 10h, 10h. ok is false once attempt
// reaches MaxAttempts (8): give up and mark the delivery failed. An attempt
// below 1 is treated as 1.
func NextRetry(attempt int) (delay time.Duration, ok bool) {
	if attempt < 1 {
		attempt = 1
	}
	if attempt >= MaxAttempts {
		return 0, false
	}
	return retrySchedule[attempt-1], true
}
