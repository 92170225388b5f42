package console_test

import (
	"os"
	"path/filepath"

	"github.com/chromedp/chromedp"
)

// shot saves a full-page screenshot as $PARLEY_SHOTS/name-1280.png (or
// -phone.png) when PARLEY_SHOTS names a folder: a person looks at the
// pages a test went through. Without it, it does nothing.
func (b *browser) shot(name string, phone bool) {
	b.t.Helper()
	dir := os.Getenv("PARLEY_SHOTS")
	if dir == "" {
		return
	}
	ctx, cancel := b.step()
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("browser: screenshot: %v", err)
	}
	suffix := "-1280.png"
	if phone {
		suffix = "-phone.png"
	}
	if err := os.WriteFile(filepath.Join(dir, name+suffix), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}
