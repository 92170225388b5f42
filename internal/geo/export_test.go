package geo

// ParseEmbedded decompresses and indexes the embedded table from scratch,
// bypassing the sync.OnceValue cache, and returns the number of ZIP codes.
// It exists so that geo_test can benchmark the first load.
func ParseEmbedded() (int, error) {
	t, err := parseTable(zipsGz)
	if err != nil {
		return 0, err
	}
	return len(t.off), nil
}

// ParseTable parses gz as the embedded table and returns its zones, so that
// geo_test can check what a malformed table is refused for.
func ParseTable(gz []byte) ([]string, error) {
	t, err := parseTable(gz)
	if err != nil {
		return nil, err
	}
	return t.zones, nil
}
