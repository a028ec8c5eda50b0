package nativetool_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/berth-mcp/berth/nativetool"
)

// A complete provider with one tool. Build it as its own main package;
// berth launches it, it does not run on its own.
func ExampleServe() {
	nativetool.Serve(nativetool.Tool{
		Name:        "shout",
		Description: "Upper-cases a text.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
		Annotations: &nativetool.Annotations{ReadOnlyHint: true, OpenWorldHint: nativetool.Bool(false)},
		Handler: func(ctx context.Context, args json.RawMessage) (*nativetool.Result, error) {
			var in struct {
				Text string `json:"text"`
			}
			if err := nativetool.DecodeArgs(args, &in); err != nil {
				return nil, err // the model sees it as an isError result
			}
			nativetool.Logger(ctx).Info("shouting", "bytes", len(in.Text))
			return nativetool.Text(strings.ToUpper(in.Text)), nil
		},
	})
}

// How a host runs a provider. The checksum comes from the staged listing,
// not from the file (hashed here only to keep the example short).
func ExampleLaunch() {
	exe := "/path/to/staged/bundle/bin/fmttools"
	b, err := os.ReadFile(exe)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	c, err := nativetool.Launch(ctx, exe, sha256.Sum256(b), &nativetool.LaunchOptions{
		Env:       []string{"PATH=/usr/bin:/bin", "HOME=/home/me", "LANG=C.UTF-8", "TMPDIR=/tmp"},
		Workspace: "/home/me/project",
		Stderr:    os.Stderr,
	})
	if err != nil {
		log.Fatal(err) // a *nativetool.ChecksumError if the file was swapped
	}
	defer c.Kill()
	tools, err := c.ListTools(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range tools {
		fmt.Println(t.Name)
	}
	res, err := c.CallTool(ctx, "hash_file", json.RawMessage(`{"path":"go.mod"}`))
	if err != nil {
		log.Fatal(err) // nativetool.ErrExited if the plugin died: launch it again
	}
	fmt.Println(res.IsError, res.StructuredContent)
}

// A handler decodes its arguments strictly: a field the tool does not
// know is an error, which the model sees as an isError result.
func ExampleDecodeArgs() {
	var in struct {
		Text string `json:"text"`
	}
	fmt.Println(nativetool.DecodeArgs(json.RawMessage(`{"text":"hi"}`), &in), in.Text)
	fmt.Println(nativetool.DecodeArgs(json.RawMessage(`{"text":"hi","mode":"loud"}`), &in) != nil)
	fmt.Println(string(nativetool.Text("done").Content[0]))
	// Output:
	// <nil> hi
	// true
	// {"type":"text","text":"done"}
}
