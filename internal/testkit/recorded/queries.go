package recorded

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Query is one labelled query of queries.json: words a user might type
// and the exported name of the tool that does it. Alternatives are other
// recorded servers' tools that do the same thing (three browser servers
// each take a screenshot); any of them answers the query.
type Query struct {
	Query        string   `json:"query"`
	Tool         string   `json:"tool"`
	Alternatives []string `json:"alternatives,omitempty"`
}

// Right reports whether the exported name answers q.
func (q Query) Right(name string) bool {
	if name == q.Tool {
		return true
	}
	for _, a := range q.Alternatives {
		if name == a {
			return true
		}
	}
	return false
}

// Queries reads queries.json of dir.
func Queries(dir string) ([]Query, error) {
	data, err := os.ReadFile(filepath.Join(dir, "queries.json"))
	if err != nil {
		return nil, err
	}
	var f struct {
		Queries []Query `json:"queries"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("queries.json: %w", err)
	}
	return f.Queries, nil
}
