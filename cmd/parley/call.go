package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/app"
)

const devCredentialsFile = "dev-credentials.json"

// devCredentials is what first run saves for `parley call`.
type devCredentials struct {
	URL      string `json:"url"`
	Username string `json:"username"`
	Secret   string `json:"secret"`
	BrandID  int64  `json:"brand_id"`
}

func readDevCredentials(path string) (devCredentials, error) {
	var c devCredentials
	b, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	err = json.Unmarshal(b, &c)
	return c, err
}

func writeDevCredentials(path string, c devCredentials) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o600)
}

func runCall(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlags("call")
	data := fs.String("data", "", "JSON body, or @file.json")
	file := fs.String("file", "", "upload this file as multipart part 'file'")
	urlFlag := stringFlag(fs, getenv, "url", "", "server address (default: the dev credentials' URL, else http://127.0.0.1:8080)")
	dataDir := stringFlag(fs, getenv, "data-dir", app.DefaultDataDir, "where the dev credentials are")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: parley call METHOD PATH [--data JSON | --data @file.json] [--file PATH] [--url URL]")
		fs.PrintDefaults()
	}
	// Flags may come after METHOD PATH.
	var pos []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(pos) != 2 {
		fs.Usage()
		return errors.New("call: want METHOD and PATH")
	}
	method, path := strings.ToUpper(pos[0]), pos[1]

	username, secret, baseURL := getenv("PARLEY_USERNAME"), getenv("PARLEY_SECRET"), *urlFlag
	if username == "" || secret == "" || baseURL == "" {
		creds, err := readDevCredentials(filepath.Join(*dataDir, devCredentialsFile))
		if err != nil && (username == "" || secret == "") {
			return fmt.Errorf("call: set PARLEY_USERNAME and PARLEY_SECRET, or run `parley serve` once to create %s: %w",
				filepath.Join(*dataDir, devCredentialsFile), err)
		}
		if username == "" || secret == "" {
			username, secret = creds.Username, creds.Secret
		}
		if baseURL == "" {
			baseURL = creds.URL
		}
	}
	if baseURL == "" {
		baseURL = "http://127.0.0.1:8080"
	}

	var body []byte
	contentType := ""
	switch {
	case *data != "" && *file != "":
		return errors.New("call: --data and --file do not go together")
	case strings.HasPrefix(*data, "@"):
		b, err := os.ReadFile((*data)[1:])
		if err != nil {
			return err
		}
		body, contentType = b, "application/json"
	case *data != "":
		body, contentType = []byte(*data), "application/json"
	case *file != "":
		f, err := os.Open(*file)
		if err != nil {
			return err
		}
		defer f.Close()
		if body, contentType, err = client.MultipartFile(filepath.Base(*file), f); err != nil {
			return err
		}
	}

	resp, err := client.New(baseURL, username, secret).Do(ctx, method, path, body, contentType)
	if err != nil {
		return err
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, resp.Body, "", "  ") == nil {
		pretty.WriteByte('\n')
		stdout.Write(pretty.Bytes())
	} else {
		stdout.Write(resp.Body)
	}
	if resp.StatusCode >= 400 {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return nil
}
