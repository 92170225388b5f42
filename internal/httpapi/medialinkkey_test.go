package httpapi_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/secretbox"
)

// TestMediaLinkKeyDerived: media links (D9) are signed under their own
// subkey of the server key, HKDF-derived with the label "parley media
// links" as the idempotency answers' key is (issue #31): a link signed
// with the bare server key, or with the HMAC of it used before, is
// refused; no transition (links live 24 h and the provider fetches them
// at once, docs/deploy.md).
func TestMediaLinkKeyDerived(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	key, err := secretbox.ParseKey(e.App.Config.SecretKey)
	if err != nil {
		t.Fatal(err)
	}
	f := fileStored(t, e, e.BrandA.ID, fileDecode(t, fileUpload(t, e, e.A, "pic.jpg", fileJPEG))["id"].(string))
	exp := strconv.FormatInt(e.Now().Add(time.Minute).Unix(), 10)
	link := func(k []byte) string {
		m := hmac.New(sha256.New, k)
		fmt.Fprintf(m, "%d\n%s\n%s", f.BrandID, f.ID, exp)
		return "/media/" + f.ID + "?brand=" + strconv.FormatInt(f.BrandID, 10) + "&expires=" + exp +
			"&sig=" + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
	}
	derived := secretbox.DeriveKey(key, "parley media links")
	if bytes.Equal(derived, key) {
		t.Fatal("the link key is the server key")
	}
	if got, want := link(derived), e.App.Service.MediaURLPath(f, e.Now().Add(time.Minute)); got != want {
		t.Errorf("the server signs %q, want %q (the derived key)", want, got)
	}
	if resp, body := fileGetMedia(t, e, link(derived)); resp.StatusCode != 200 || !bytes.Equal(body, fileJPEG) {
		t.Errorf("a link signed with the derived key: %d, %d bytes; want 200 and the file", resp.StatusCode, len(body))
	}
	old := hmac.New(sha256.New, key)
	old.Write([]byte("parley media links"))
	for name, k := range map[string][]byte{"bare server key": key, "pre-#31 key": old.Sum(nil)} {
		resp, body := fileGetMedia(t, e, link(k))
		fileWantMediaNotFound(t, resp, body)
		if bytes.Contains(body, fileJPEG[:4]) {
			t.Errorf("a link signed with the %s leaked the file", name)
		}
	}
}
