package pool

import (
	"slices"
	"testing"
)

func TestSuggestTools(t *testing.T) {
	names := []string{"fs__files__read_text_file", "fs__files__write_file", "fs__files__read_media_file", "notes__notes__search"}
	for _, c := range []struct {
		name string
		want []string
	}{
		{"read_text_file", []string{"fs__files__read_text_file"}},
		{"other__srv__search", []string{"notes__notes__search"}},
		{"fs__files__read_txt_file", []string{"fs__files__read_text_file"}},
		{"fs__file__write_file", []string{"fs__files__write_file"}},
		{"delete_everything", nil},
		{"", nil},
	} {
		if got := suggestTools(c.name, names); !slices.Equal(got, c.want) {
			t.Errorf("suggestTools(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"a", "", 1}, {"kitten", "sitting", 3}, {"abc", "abc", 0}} {
		if got := editDistance(c.a, c.b); got != c.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

// TestUnknownToolErrorText: the suggestion is the question, and the
// pointer to the catalog an aside to it; without a suggestion the pointer
// is the fix.
func TestUnknownToolErrorText(t *testing.T) {
	e := &UnknownToolError{Name: "destroy", msg: "no tool named destroy is enabled", DidYouMean: []string{"a__b__destroy", "c__d__destroy"}}
	if got, want := e.Error(), "no tool named destroy is enabled; did you mean a__b__destroy or c__d__destroy? (berth tools lists the catalog)"; got != want {
		t.Errorf("Error() = %q; want %q", got, want)
	}
	e.DidYouMean = nil
	if got, want := e.Error(), "no tool named destroy is enabled; berth tools lists the catalog"; got != want {
		t.Errorf("Error() = %q; want %q", got, want)
	}
}
