// Command sessionflood measures what many sessions cost `berth serve
// --http`: it sends N initialize requests, each opening a new Streamable
// HTTP session that it never closes, as fast as W workers can, and prints
// the server's resident memory (VmRSS, and the peak VmHWM, from /proc)
// before and after, as one JSON line. With -close each session is a whole
// one: initialize, notifications/initialized, tools/list, then DELETE,
// which ends it. See bench/README.md.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"sessionflood","version":"1"}}}`

func main() {
	var (
		url       = flag.String("url", "", "the Streamable HTTP endpoint (…/mcp)")
		pid       = flag.Int("pid", 0, "the server's process ID, for its memory")
		n         = flag.Int("n", 25000, "initialize requests to send")
		workers   = flag.Int("workers", 8, "concurrent requests")
		tokenFile = flag.String("token-file", "", "file holding the bearer token (none: send no token)")
		closeEach = flag.Bool("close", false, "make each session whole and end it (DELETE) before the next")
		settle    = flag.Duration("settle", time.Second, "wait this long before reading the memory after")
	)
	flag.Parse()
	token := ""
	if *tokenFile != "" {
		data, err := os.ReadFile(*tokenFile)
		if err != nil {
			log.Fatal(err)
		}
		token = strings.TrimSpace(string(data))
	}
	before := rss(*pid)
	var sent, failed atomic.Int64
	codes := sync.Map{}
	start := time.Now()
	var wg sync.WaitGroup
	for range *workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for sent.Add(1) <= int64(*n) {
				res, err := send(*url, token, http.MethodPost, "", initBody)
				if err != nil {
					failed.Add(1)
					continue
				}
				c, _ := codes.LoadOrStore(res.StatusCode, new(atomic.Int64))
				c.(*atomic.Int64).Add(1)
				if id := res.Header.Get("Mcp-Session-Id"); *closeEach && id != "" {
					for _, m := range []struct{ method, body string }{
						{http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
						{http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`},
						{http.MethodDelete, ""},
					} {
						if res, err := send(*url, token, m.method, id, m.body); err != nil || res.StatusCode >= 300 {
							failed.Add(1)
						}
					}
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	time.Sleep(*settle)
	after := rss(*pid)
	byCode := map[string]int64{}
	codes.Range(func(k, v any) bool { byCode[fmt.Sprint(k)] = v.(*atomic.Int64).Load(); return true })
	out, _ := json.Marshal(map[string]any{
		"requests": *n, "seconds": elapsed.Seconds(), "failed": failed.Load(), "status": byCode,
		"rss_before_mb": before["VmRSS"], "rss_after_mb": after["VmRSS"], "rss_peak_mb": after["VmHWM"],
	})
	fmt.Println(string(out))
}

// send makes one request of a session (id "" before it has one) and
// reads the answer whole.
func send(url, token, method, id, body string) (*http.Response, error) {
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if id != "" {
		req.Header.Set("Mcp-Session-Id", id)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res, nil
}

// rss reads VmRSS and VmHWM of pid in MB.
func rss(pid int) map[string]float64 {
	out := map[string]float64{}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(data), "\n") {
		for _, k := range []string{"VmRSS", "VmHWM"} {
			if rest, ok := strings.CutPrefix(line, k+":"); ok {
				var kb float64
				fmt.Sscanf(strings.TrimSpace(rest), "%f", &kb)
				out[k] = float64(int(kb/1024*10)) / 10
			}
		}
	}
	return out
}
