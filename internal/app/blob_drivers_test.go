package app

import (
	"context"
	"strings"
	"testing"

	"gocloud.dev/blob"
)

// builtWith holds the optional bucket schemes whose build tag this test
// binary was built with; each tag's test file adds its own.
var builtWith = map[string]bool{}

// TestBlobSchemes (issues #3, #35): file:// and s3:// (AWS and
// S3-compatible stores) are in every build; gs:// and azblob:// are in a
// build with their tag, and without it a server configured for one
// refuses to start with an error naming the tag.
func TestBlobSchemes(t *testing.T) {
	for _, scheme := range []string{"file", "s3"} {
		if !blob.DefaultURLMux().ValidBucketScheme(scheme) {
			t.Errorf("blob scheme %s:// is not registered", scheme)
		}
	}
	if len(optionalBlobSchemes) != 2 {
		t.Errorf("optional schemes %v: the test expects gs and azblob", optionalBlobSchemes)
	}
	for scheme, tag := range optionalBlobSchemes {
		t.Run(scheme, func(t *testing.T) {
			if registered := blob.DefaultURLMux().ValidBucketScheme(scheme); registered != builtWith[scheme] {
				t.Fatalf("%s:// registered = %v in a build with tag %s = %v", scheme, registered, tag, builtWith[scheme])
			}
			if builtWith[scheme] {
				if err := checkBlobScheme(scheme + "://bucket"); err != nil {
					t.Fatalf("checkBlobScheme: %v", err)
				}
				return
			}
			a, err := Open(context.Background(), Config{DataDir: t.TempDir(), Blob: scheme + "://bucket"})
			if err == nil {
				a.Close()
				t.Fatalf("Open with a %s:// bucket in a build without tag %s: no error", scheme, tag)
			}
			if want := "-tags " + tag; !strings.Contains(err.Error(), want) {
				t.Fatalf("Open: %v; want an error naming %q", err, want)
			}
			t.Log(err)
		})
	}
}
