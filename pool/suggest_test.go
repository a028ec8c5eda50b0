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
