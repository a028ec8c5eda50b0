package catalog

import (
	"errors"
	"testing"
)

func TestParseCatalogUnreadable(t *testing.T) {
	for _, doc := range []string{``, `[]`, `null`, `{"plugins": []}`, `{"catalogVersion": 2, "plugins": []}`, `{"catalogVersion": 1}`, `{"catalogVersion": 1, "plugins": {}}`, "\xff"} {
		_, _, err := Parse([]byte(doc))
		if !errors.Is(err, ErrFormat) {
			t.Errorf("%q: %v", doc, err)
		}
	}
}

func TestCheckLocation(t *testing.T) {
	for _, ok := range []string{"bundles/a/1.0.0/a-1.0.0.tar.gz", "https://cdn.example/a.tgz", "a.zip"} {
		if err := CheckLocation(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "../a.tgz", "/etc/passwd", "a/../../b", "http://cdn.example/a", "https://u:p@cdn.example/a", "a\\b", "a?x=1", "file:///etc/passwd", "./a", "a//b", "https://cdn.example/a#x"} {
		if err := CheckLocation(bad); err == nil {
			t.Errorf("%q is accepted", bad)
		}
	}
}
