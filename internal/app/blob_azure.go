//go:build azure

package app

import _ "gocloud.dev/blob/azureblob" // azblob:// buckets (Azure Blob Storage)
