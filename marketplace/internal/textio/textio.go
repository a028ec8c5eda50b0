// Package textio holds the few small helpers that more than one of the
// marketplace's packages (the catalog format, the curator's repository,
// the operator's cache, berth.lock and the foreign sources) needs and
// that belong to none of them: the shortening of
// JSON errors and long values for messages, indented JSON, and the test
// for a URL scheme and a sha256 digest.
package textio

import (
	"encoding/json"
	"regexp"
	"strings"
)

// JSONError shortens an encoding/json error for a message.
func JSONError(err error) string {
	s := err.Error()
	s = strings.TrimPrefix(s, "json: ")
	return strings.ReplaceAll(s, "Go struct field ", "field ")
}

// HasScheme reports whether loc starts with a URL scheme (before any '/').
func HasScheme(loc string) bool {
	for i := 0; i < len(loc); i++ {
		switch c := loc[i]; {
		case c == ':':
			return i > 0
		case c == '/':
			return false
		}
	}
	return false
}

// ShortText cuts s to 40 bytes for a message.
func ShortText(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// MustJSON is v as indented JSON with a final newline; v is plain data.
func MustJSON(v any) []byte {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(err)
	}
	return append(data, '\n')
}

var hex64 = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// IsSHA256 reports whether s is a digest as berth writes it:
// sha256:<64 lower-case hex digits>.
func IsSHA256(s string) bool { return hex64.MatchString(s) }
