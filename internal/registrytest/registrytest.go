// Package registrytest serves a recorded MCP Registry listing (such as
// ../shared/corpus/registry/server-registry.json) as the registry API
// does, for tests: GET /v0/servers in pages, with the paging contract of
// the corpus's README.
package registrytest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
)

// Listing is a recorded listing: its servers[] items, in order.
type Listing struct {
	Items []json.RawMessage
}

// Load reads a recorded listing, a document {"servers": [...], ...}.
func Load(file string) (*Listing, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Servers []json.RawMessage `json:"servers"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	if doc.Servers == nil {
		return nil, fmt.Errorf("%s has no servers array", file)
	}
	return &Listing{Items: doc.Servers}, nil
}

// Servers returns the server.json document of each item, in order.
func (l *Listing) Servers() ([]json.RawMessage, error) {
	out := make([]json.RawMessage, 0, len(l.Items))
	for i, raw := range l.Items {
		var it struct {
			Server json.RawMessage `json:"server"`
		}
		if err := json.Unmarshal(raw, &it); err != nil {
			return nil, fmt.Errorf("item %d: %v", i, err)
		}
		out = append(out, it.Server)
	}
	return out, nil
}

// ServeHTTP answers GET /v0/servers?cursor=&limit= with a slice of the
// items: limit defaults to 30 and is at most 100 (the live API's bounds);
// the cursor is the decimal offset of the page's first item, and
// metadata.nextCursor is left out on the last page. Any other path is
// 404, and a cursor that is not an offset into the listing is 400.
func (l *Listing) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v0/servers" {
		http.Error(w, `{"error": "not found"}`, http.StatusNotFound)
		return
	}
	q := r.URL.Query()
	start := 0
	if c := q.Get("cursor"); c != "" {
		n, err := strconv.Atoi(c)
		if err != nil || n < 0 || n > len(l.Items) {
			http.Error(w, `{"error": "bad cursor"}`, http.StatusBadRequest)
			return
		}
		start = n
	}
	limit := 30
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			http.Error(w, `{"error": "bad limit"}`, http.StatusBadRequest)
			return
		}
		limit = min(n, 100)
	}
	end := min(start+limit, len(l.Items))
	meta := map[string]any{"count": end - start}
	if end < len(l.Items) {
		meta["nextCursor"] = strconv.Itoa(end)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"servers": l.Items[start:end], "metadata": meta})
}
