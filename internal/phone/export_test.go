package phone

// NormalizeSlow is Normalize without the fast path: every input goes
// through phonenumbers.
func NormalizeSlow(s string, m Mode) (string, bool) {
	return normalize(s, m, false)
}

// FastAccept exposes the fast path's verdict for compact ("+" and ASCII
// digits): true means it answers (compact, true) without phonenumbers.
func FastAccept(compact string, m Mode) bool {
	return fastAccept(compact, m)
}

// FastPathCallingCodes returns the number of supported calling codes and the
// ones the fast path never handles.
func FastPathCallingCodes() (supported int, excluded []int) {
	for cc, ok := range callingCodes() {
		if !ok {
			continue
		}
		supported++
		if lookupCC(cc) == nil {
			excluded = append(excluded, cc)
		}
	}
	return supported, excluded
}
