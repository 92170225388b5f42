package service

// SetBeforeHandOver runs f just before each hand-over (issue #31 item 12):
// tests put a STOP between a claim and its hand-over with it.
func (s *Service) SetBeforeHandOver(f func(brandID int64, ids []int64)) { s.beforeHandOver = f }
