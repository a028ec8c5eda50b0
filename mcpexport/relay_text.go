package mcpexport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/review"
)

// What berth checks of a plugin server's elicitation so that it cannot
// pass for berth's own approval form (approvalMessage, approvalSchema):
// its message (relayedMessage) and its requested schema (relayedSchema).

// MaxElicitLineRunes is how many characters (runes, after escaping) of
// one line of a plugin's elicitation text berth passes on; the rest of
// the line is cut and marked with "…", so a long line cannot scroll the
// origin out of view.
const MaxElicitLineRunes = 200

// formLabels are the labels that begin lines of berth's approval form
// (approvalMessage), folded: no line of a plugin's elicitation text may
// begin with one.
var formLabels = []string{"prompt", "resource", "tool", "server", "annotations", "policy", "client", "arguments"}

// berthChoices are the choices of berth's approval form that no plugin's
// form may offer.
var berthChoices = []string{choiceOnce, choiceAlways}

// confusables maps letters that look like the Latin letters of berth's
// words (berth, plugin, tool, server, policy, client, arguments, …) but
// are not them, to those letters: Cyrillic, Greek and Latin small capitals
// and other lookalikes. Full-width and other compatibility forms are
// folded by NFKD before (fold). The list is small on purpose: it covers
// the letters of the words berth matches, not all of Unicode's
// confusables.
var confusables = map[rune]rune{
	// Cyrillic
	'а': 'a', 'А': 'a', 'в': 'b', 'В': 'b', 'Ь': 'b', 'ь': 'b', 'с': 'c', 'С': 'c', 'ԁ': 'd',
	'е': 'e', 'Е': 'e', 'ё': 'e', 'ɡ': 'g', 'һ': 'h', 'Н': 'h', 'н': 'h', 'і': 'i', 'І': 'i',
	'ӏ': 'l', 'Ӏ': 'l', 'ј': 'j', 'Ј': 'j', 'к': 'k', 'К': 'k', 'м': 'm', 'М': 'm', 'п': 'n',
	'о': 'o', 'О': 'o', 'р': 'p', 'Р': 'p', 'ԛ': 'q', 'г': 'r', 'ѕ': 's', 'Ѕ': 's', 'т': 't',
	'Т': 't', 'у': 'y', 'У': 'y', 'х': 'x', 'Х': 'x', 'ԝ': 'w', 'Ԝ': 'w', 'џ': 'u',
	// Greek
	'α': 'a', 'Α': 'a', 'β': 'b', 'Β': 'b', 'ε': 'e', 'Ε': 'e', 'Ζ': 'z', 'η': 'n', 'Η': 'h',
	'ι': 'i', 'Ι': 'i', 'κ': 'k', 'Κ': 'k', 'Μ': 'm', 'ν': 'v', 'Ν': 'n', 'ο': 'o', 'Ο': 'o',
	'ρ': 'p', 'Ρ': 'p', 'τ': 't', 'Τ': 't', 'υ': 'u', 'Υ': 'y', 'χ': 'x', 'Χ': 'x', 'ϲ': 'c',
	'Ϲ': 'c', 'ϳ': 'j',
	// Latin lookalikes and small capitals
	'ı': 'i', 'ɩ': 'i', 'ɪ': 'i', 'ʟ': 'l', 'ɫ': 'l', 'ʙ': 'b', 'ᴄ': 'c', 'ᴇ': 'e', 'ɢ': 'g',
	'ʜ': 'h', 'ɴ': 'n', 'ᴏ': 'o', 'ᴘ': 'p', 'ʀ': 'r', 'ꜱ': 's', 'ᴛ': 't', 'ᴜ': 'u', 'ᴀ': 'a',
	'ℓ': 'l', 'ſ': 's',
}

// fold is s as berth compares it with its own words: compatibility forms
// (full-width letters, ligatures, mathematical letters) decomposed to
// their plain letters (NFKD), combining marks dropped, the lookalikes of
// confusables mapped to Latin letters, and lower case. Only for matching:
// what is shown is never folded.
func fold(s string) string {
	var b strings.Builder
	for _, r := range norm.NFKD.String(s) {
		if unicode.Is(unicode.Mn, r) {
			continue
		}
		if l, ok := confusables[r]; ok {
			r = l
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// printableLines is text of a plugin's elicitation (a message, a
// description) as lines berth passes on: control and format characters
// escaped as a log line's are (review.PrintableLines), blank lines
// dropped, trailing spaces cut, at most MaxElicitLines lines (the rest
// joined to the last with spaces) and each line cut at
// MaxElicitLineRunes.
func printableLines(s string) []string {
	var lines []string
	for l := range strings.Lines(review.PrintableLines(s)) {
		l = strings.TrimRight(l, " \t\n")
		if strings.TrimLeft(l, " \t") == "" {
			continue
		}
		lines = append(lines, l)
	}
	if len(lines) > MaxElicitLines {
		rest := lines[MaxElicitLines-1:]
		for i := range rest {
			rest[i] = strings.TrimLeft(rest[i], " \t")
		}
		lines = append(lines[:MaxElicitLines-1], strings.Join(rest, " "))
	}
	for i := range lines {
		lines[i] = capRunes(lines[i], MaxElicitLineRunes)
	}
	return lines
}

// capRunes cuts s to n runes, marking a cut with "…".
func capRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for j := range s {
		if i == n {
			return s[:j] + "…"
		}
		i++
	}
	return s
}

// imitatesBerth reports the first line of an elicitation's text (escaped
// and without blank lines) that reads like berth's own text: a first line
// that begins with the word "berth" (as the approval form's "berth: allow
// this tool call?" does), and any line that begins with "berth:", with
// "[plugin" (the origin berth puts first), with the form's "Run this tool
// call?" or with a label of the form ("Tool:", "Server:", "Policy:", …,
// formLabels). Case, leading spaces and lookalike letters (fold) do not
// matter.
func imitatesBerth(lines []string) (string, bool) {
	for i, l := range lines {
		if imitatesLine(l, i == 0) {
			return l, true
		}
	}
	return "", false
}

func imitatesLine(l string, first bool) bool {
	t := strings.TrimLeft(fold(l), " \t")
	if strings.HasPrefix(t, "[plugin") || strings.HasPrefix(t, "run this tool call") {
		return true
	}
	for _, label := range append([]string{"berth"}, formLabels...) {
		if rest, ok := strings.CutPrefix(t, label); ok && strings.HasPrefix(strings.TrimLeft(rest, " \t"), ":") {
			return true
		}
	}
	if rest, ok := strings.CutPrefix(t, "berth"); first && ok {
		r, _ := utf8.DecodeRuneInString(rest)
		return rest == "" || !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}
	return false
}

// mentionsBerthForm reports whether text of a plugin's form names what
// only berth's approval form says: its question "Run this tool call?" or
// its choices allow-once and allow-always, anywhere in it.
func mentionsBerthForm(s string) bool {
	t := fold(s)
	if strings.Contains(t, "run this tool call") {
		return true
	}
	for _, c := range berthChoices {
		if strings.Contains(t, c) {
			return true
		}
	}
	return false
}

// relayedSchema is the requested schema of a plugin server's elicitation
// (method, for the error) as berth passes it to the client: every string
// in it escaped as a log line is (review.Printable; a description as the
// message's lines are, printableLines), titles, descriptions and
// enumNames cut at MaxElicitLineRunes per line. berth refuses a schema
// that could pass for its approval form or hide what it asks: a property
// that offers berth's choices (allow-once, allow-always; or a "decision"
// that offers deny), a title, description or enumName that reads like
// berth's text (imitatesBerth, mentionsBerthForm), a property name with
// a character that would be escaped, and a value (an enum value, a
// default, …) longer than MaxElicitLineRunes.
func relayedSchema(from pool.Origin, method string, schema any) (any, error) {
	if schema == nil {
		return nil, nil
	}
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil, relayRefusal("berth refused %s from %s: its requested schema is not JSON: %v", method, from.ID, err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, relayRefusal("berth refused %s from %s: its requested schema is not JSON: %v", method, from.ID, err)
	}
	if what, ok := offersBerthChoices(v); ok {
		return nil, relayRefusal("berth refused %s from %s: its form reads like berth's own approval form (%s); berth passes on no form that offers berth's choices %s or %s (the plugin should word its form as its own)", method, from.ID, what, choiceOnce, choiceAlways)
	}
	w := &schemaWalk{}
	out := w.walk(v, "")
	if w.refused != "" {
		return nil, relayRefusal("berth refused %s from %s: %s", method, from.ID, w.refused)
	}
	return out, nil
}

// offersBerthChoices says which property of schema v offers a choice of
// berth's approval form: an enum or const value (anywhere in the
// property's schema: enum, oneOf, anyOf, items) that is allow-once or
// allow-always, or deny in a property named "decision" (berth's).
func offersBerthChoices(v any) (string, bool) {
	m, _ := v.(map[string]any)
	props, _ := m["properties"].(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(props)) {
		for _, c := range choicesOf(props[name], "") {
			fc := strings.TrimSpace(fold(c))
			for _, b := range berthChoices {
				if fc == b {
					return "property " + review.Printable(capRunes(name, 40)) + " offers " + review.Printable(capRunes(c, 40)), true
				}
			}
			if fc == choiceDeny && strings.TrimSpace(fold(name)) == "decision" {
				return "property " + review.Printable(capRunes(name, 40)) + " offers " + review.Printable(capRunes(c, 40)), true
			}
		}
	}
	return "", false
}

// choicesOf collects the strings under "enum" and "const" keys in v.
func choicesOf(v any, key string) []string {
	var out []string
	switch x := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			out = append(out, choicesOf(x[k], k)...)
		}
	case []any:
		for _, y := range x {
			out = append(out, choicesOf(y, key)...)
		}
	case string:
		if key == "enum" || key == "const" {
			out = append(out, x)
		}
	}
	return out
}

// schemaWalk rebuilds a requested schema with its strings escaped; refused
// says why berth refuses it ("" while it does not).
type schemaWalk struct {
	refused string
}

// walk returns v (under the key key) with its strings escaped.
func (w *schemaWalk) walk(v any, key string) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for _, k := range slices.Sorted(maps.Keys(x)) {
			y := x[k]
			nk := review.Printable(k)
			if key == "properties" && (nk != k || utf8.RuneCountInString(k) > MaxElicitLineRunes) {
				w.refuse("its form has a property named %q, with a control or format character or over %d characters; berth passes on only property names it can show as they are", review.Cut(nk, 80), MaxElicitLineRunes)
			}
			out[nk] = w.walk(y, k)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, y := range x {
			out[i] = w.walk(y, key)
		}
		return out
	case string:
		return w.text(x, key)
	}
	return v
}

// text escapes the string s found under the key key.
func (w *schemaWalk) text(s, key string) string {
	switch key {
	case "description":
		lines := printableLines(s)
		if l, ok := imitatesBerth(lines); ok || mentionsBerthForm(strings.Join(lines, "\n")) {
			if !ok {
				l = strings.Join(lines, " ")
			}
			w.refuseImitation(l)
		}
		return strings.Join(lines, "\n")
	case "title", "enumNames":
		t := capRunes(review.Printable(s), MaxElicitLineRunes)
		if imitatesLine(t, true) || mentionsBerthForm(t) {
			w.refuseImitation(t)
		}
		return t
	}
	t := review.Printable(s)
	if utf8.RuneCountInString(t) > MaxElicitLineRunes {
		w.refuse("its form has a value (%s) over %d characters (%q); berth passes on no longer value", key, MaxElicitLineRunes, review.Cut(t, 80))
	}
	return t
}

func (w *schemaWalk) refuseImitation(l string) {
	w.refuse("its form reads like berth's own approval form (%q); berth passes on no form whose title, description or choice names read like berth's text: one that begins with \"berth\", \"[plugin\", \"Run this tool call?\" or a label of berth's form (\"Tool:\", \"Server:\", \"Policy:\", …), or names allow-once or allow-always, letters that look alike counted as the same (the plugin should word its form as its own)", review.Cut(l, 80))
}

func (w *schemaWalk) refuse(format string, args ...any) {
	if w.refused == "" {
		w.refused = fmt.Sprintf(format, args...)
	}
}
