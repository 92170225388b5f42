package app

import (
	"testing"

	"gocloud.dev/blob"
)

// TestBlobSchemes: --blob takes file://, s3://, gs:// and azblob:// URLs (issue #3).
func TestBlobSchemes(t *testing.T) {
	for _, scheme := range []string{"file", "s3", "gs", "azblob"} {
		if !blob.DefaultURLMux().ValidBucketScheme(scheme) {
			t.Errorf("blob scheme %s:// is not registered", scheme)
		}
	}
}
