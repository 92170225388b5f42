package app

import (
	"testing"
)

// TestLocalTemp (issue #31 item 14): a file:// media store makes its
// temporary files beside their destination, unless its operator said
// otherwise; other stores' URLs are left alone.
func TestLocalTemp(t *testing.T) {
	for in, want := range map[string]string{
		"file:///data/media?create_dir=true": "file:///data/media?create_dir=true&no_tmp_dir=true",
		"file:///data/media":                 "file:///data/media?no_tmp_dir=true",
		"file:///data/media?no_tmp_dir=":     "file:///data/media?no_tmp_dir=",
		"s3://bucket?region=us-east-1":       "s3://bucket?region=us-east-1",
	} {
		if got := localTemp(in); got != want {
			t.Errorf("localTemp(%q) = %q, want %q", in, got, want)
		}
	}
}
