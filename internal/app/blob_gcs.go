//go:build gcs

package app

import _ "gocloud.dev/blob/gcsblob" // gs:// buckets (Google Cloud Storage)
