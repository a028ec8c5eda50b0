package review

import (
	"strings"
	"testing"
)

// A registry URL with a user and password (an operator's mirror) is shown
// without them, in review's text as in its JSON.
func TestRegistryNameRedactsUserinfo(t *testing.T) {
	for _, eco := range []string{"npm", "pypi", "go", "jsr", "oci", "other"} {
		got := registryName(Fetch{Ecosystem: eco, Registry: "https://ci:s3cret-pw@npm.corp.example/"})
		if strings.Contains(got, "s3cret-pw") || strings.Contains(got, "ci:") {
			t.Errorf("%s: %q shows the registry's user or password", eco, got)
		}
		if !strings.Contains(got, "npm.corp.example") {
			t.Errorf("%s: %q does not name the registry's host", eco, got)
		}
	}
}
