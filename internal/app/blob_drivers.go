package app

import (
	"fmt"
	"net/url"

	"gocloud.dev/blob"
	_ "gocloud.dev/blob/fileblob" // file:// buckets
	_ "gocloud.dev/blob/s3blob"   // s3:// buckets (AWS and S3-compatible stores)
)

// optionalBlobSchemes are the bucket schemes whose SDKs are left out of the
// default build (issue #35: Google's and Azure's SDKs were two thirds of a
// 97 MB binary); each maps to the build tag that brings its driver in.
var optionalBlobSchemes = map[string]string{
	"gs":     "gcs",
	"azblob": "azure",
}

// checkBlobScheme names the build tag a bucket URL needs when this binary
// was built without it, rather than gocloud.dev's "unknown scheme".
func checkBlobScheme(bucketURL string) error {
	u, err := url.Parse(bucketURL)
	if err != nil {
		return nil // a bad URL is OpenBucket's to report
	}
	tag, optional := optionalBlobSchemes[u.Scheme]
	if !optional || blob.DefaultURLMux().ValidBucketScheme(u.Scheme) {
		return nil
	}
	return fmt.Errorf("%s:// buckets need a parley built with the %q tag: go build -tags %s ./cmd/parley (see the README's build tags)", u.Scheme, tag, tag)
}
