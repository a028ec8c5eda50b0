package runtimefetch

import (
	"fmt"
	"strings"
)

// RuleInlineCode is an interpreter given its program as an argument
// (node -e, python3 -c, sh -c, ...) rather than as a file in the bundle
// (docs/rules.md).
const RuleInlineCode = "inline-code"

// inlineFix is the fix of every inline-code refusal.
const inlineFix = "ship the code as a file in the bundle and name that file (\"args\": [\"${bundle}/server.js\"]), so that it is under the bundle's digest and signature and the review shows it"

// inlineReaders read the arguments of the interpreters that can take
// their program as an argument, by program name (programName). Each
// returns the option that gives the code, or "" when there is none. Only
// the interpreter's own options count: the first argument that is not one
// is the script (or the command of a shell), and what follows it belongs
// to the script.
var inlineReaders = map[string]func(args []string) string{
	"node": nodeInline, "nodejs": nodeInline,
	"bun":    bunInline,
	"deno":   denoInline,
	"python": pythonInline, "pypy": pythonInline, "py": pythonInline,
	"perl": perlInline,
	"ruby": rubyInline,
	"php":  phpInline,
	"sh":   shellInline, "bash": shellInline, "rbash": shellInline, "zsh": shellInline, "dash": shellInline,
	"ash": shellInline, "ksh": shellInline, "ksh93": shellInline, "mksh": shellInline, "pdksh": shellInline,
	"oksh": shellInline, "yash": shellInline, "posh": shellInline, "csh": shellInline, "tcsh": shellInline,
	"fish": shellInline, "nu": shellInline, "elvish": shellInline, "xonsh": shellInline,
	"cmd":  cmdInline,
	"pwsh": pwshInline, "powershell": powershellInline, "powershell_ise": powershellInline,
}

// readInline refuses an interpreter given inline code; nil otherwise.
func readInline(name, command string, args []string) error {
	read, ok := inlineReaders[name]
	if !ok {
		return nil
	}
	opt := read(args)
	if opt == "" {
		return nil
	}
	msg := fmt.Sprintf("%q is given the code it runs in its arguments (%s), which no file of the bundle holds; %s", command, quoteOpt(opt), inlineFix)
	if wrappers[name] {
		msg += fmt.Sprintf("; and the command %q is a shell or a program that runs another program, never a server's command (command-wrapper): if the code only starts a program, name that program as the command", command)
	}
	return cmdErr(RuleInlineCode, "args", "%s", msg)
}

// quoteOpt names an option in a message: a long option without its
// value, a short one cut at 40 bytes, quoted as Go quotes it.
func quoteOpt(opt string) string {
	if name, _, ok := strings.Cut(opt, "="); ok && strings.HasPrefix(opt, "--") {
		return fmt.Sprintf("%q", name+"=…")
	}
	if len(opt) > 40 {
		return fmt.Sprintf("%q", opt[:40]) + "…"
	}
	return fmt.Sprintf("%q", opt)
}

// isOpt reports whether a is an option: it starts with '-' and is more
// than "-" (standard input, a script) or "--" (the end of options).
func isOpt(a string) bool { return len(a) > 1 && a[0] == '-' && a != "--" }

// longInline reports whether a is one of the long options names, alone
// or as --name=value.
func longInline(a string, names ...string) bool {
	name, _, _ := strings.Cut(a, "=")
	for _, n := range names {
		if name == n {
			return true
		}
	}
	return false
}

// nodeInline: -e, --eval, -p, --print, alone or in a cluster (-pe), and
// a module loaded from a data: URL (--import=data:text/javascript,...).
func nodeInline(args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !isOpt(a) {
			return ""
		}
		if longInline(a, "--eval", "--print") {
			return a
		}
		name, val, hasVal := strings.Cut(a, "=")
		if nodeValueOpts[name] {
			if !hasVal && i+1 < len(args) {
				i++
				val = args[i]
			}
			if nodeLoads[name] && strings.HasPrefix(strings.ToLower(strings.TrimSpace(val)), "data:") {
				return a
			}
			continue
		}
		if !strings.HasPrefix(a, "--") && strings.ContainsAny(a[1:], "ep") {
			return a
		}
	}
	return ""
}

// nodeLoads are the node options whose value is a module node loads.
var nodeLoads = setOf("-r", "--require", "--import", "--loader", "--experimental-loader")

// bunInline: bun -e, --eval, -p, --print. Every other use of bun but
// bun x is refused by runtime-fetch-form.
func bunInline(args []string) string {
	for _, a := range args {
		if !isOpt(a) {
			return ""
		}
		if longInline(a, "--eval", "--print") || (!strings.HasPrefix(a, "--") && strings.ContainsAny(a[1:], "ep")) {
			return a
		}
	}
	return ""
}

// denoInline: deno eval, and -e/--eval/-p/--print before a subcommand.
func denoInline(args []string) string {
	for _, a := range args {
		if !isOpt(a) {
			if a == "eval" {
				return a
			}
			return ""
		}
		if longInline(a, "--eval", "--print") || a == "-e" || a == "-p" {
			return a
		}
	}
	return ""
}

// pythonInline: -c, alone or at the end of a cluster (-Ic, -cCODE).
func pythonInline(args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !isOpt(a) {
			return ""
		}
		if strings.HasPrefix(a, "--") {
			if a == "--check-hash-based-pycs" {
				i++
			}
			continue
		}
		for j := 1; j < len(a); j++ {
			switch a[j] {
			case 'c':
				return a
			case 'X', 'W':
				if j == len(a)-1 {
					i++
				}
				j = len(a)
			case 'm':
				return "" // a module: what follows is its arguments
			}
		}
	}
	return ""
}

// perlInline: -e and -E, alone or in a cluster (-lne, -wE). Options that
// take the rest of their argument as a value end the cluster.
func perlInline(args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !isOpt(a) {
			return ""
		}
		if strings.HasPrefix(a, "--") {
			continue
		}
	cluster:
		for j := 1; j < len(a); j++ {
			switch c := a[j]; {
			case c == 'e' || c == 'E':
				return a
			case c == '0' && j+1 < len(a) && (a[j+1] == 'x' || a[j+1] == 'X'):
				j++ // the x
				for j+1 < len(a) && isHexDigit(a[j+1]) {
					j++
				}
			case c == '0' || c == 'l':
				for j+1 < len(a) && a[j+1] >= '0' && a[j+1] <= '7' {
					j++
				}
			case strings.IndexByte("CdDFiImMxV", c) >= 0:
				if j == len(a)-1 && (c == 'I' || c == 'M' || c == 'm') {
					i++ // -I dir
				}
				break cluster
			}
		}
	}
	return ""
}

// rubyInline: -e, alone or in a cluster (-ne). (-E is the encoding.)
func rubyInline(args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !isOpt(a) {
			return ""
		}
		if strings.HasPrefix(a, "--") {
			continue
		}
	cluster:
		for j := 1; j < len(a); j++ {
			switch c := a[j]; {
			case c == 'e':
				return a
			case c == '0':
				for j+1 < len(a) && a[j+1] >= '0' && a[j+1] <= '7' {
					j++
				}
			case strings.IndexByte("CEFIrxiKTW", c) >= 0:
				if j == len(a)-1 && strings.IndexByte("CEIr", c) >= 0 {
					i++ // -I dir, -r lib
				}
				break cluster
			}
		}
	}
	return ""
}

// phpInline: -r (--run) and the per-line code options -B, -R, -E
// (--process-begin, --process-code, --process-end).
func phpInline(args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !isOpt(a) {
			return ""
		}
		if longInline(a, "--run", "--process-begin", "--process-code", "--process-end") {
			return a
		}
		if strings.HasPrefix(a, "--") {
			continue
		}
		switch a[1] {
		case 'r', 'B', 'R', 'E':
			return a
		case 'f':
			return "" // the script
		case 'c', 'd', 'z', 'F', 't', 'S':
			if len(a) == 2 {
				i++
			}
		}
	}
	return ""
}

// shellInline: -c in a cluster of a shell's options (-c, -ec, -lc), and
// fish's, nushell's and xonsh's long forms (--command, --init-command,
// --commands) and fish's -C.
func shellInline(args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "" || a == "--" || a == "-" || (a[0] != '-' && a[0] != '+') {
			return ""
		}
		if strings.HasPrefix(a, "--") {
			if longInline(a, "--command", "--init-command", "--commands") {
				return a
			}
			if (a == "--rcfile" || a == "--init-file") && i+1 < len(args) {
				i++
			}
			continue
		}
		if a[0] == '-' && strings.ContainsAny(a[1:], "cC") {
			return a
		}
		if (strings.HasSuffix(a, "o") || strings.HasSuffix(a, "O")) && i+1 < len(args) {
			i++ // -o option, +o option, -O shopt
		}
	}
	return ""
}

// cmdInline: cmd /c and /k, in any letter case, anywhere among its
// switches.
func cmdInline(args []string) string {
	for _, a := range args {
		if !strings.HasPrefix(a, "/") {
			return ""
		}
		if l := strings.ToLower(a); strings.HasPrefix(l, "/c") && (len(l) == 2 || !isLetter(l[2])) || strings.HasPrefix(l, "/k") && (len(l) == 2 || !isLetter(l[2])) {
			return a
		}
	}
	return ""
}

// pwshInline: -Command and -EncodedCommand, by any prefix PowerShell
// accepts (-c, -com, -e, -ec, -enc), with '-', "--" or '/'. The first
// argument that is no parameter is the script (-File) for pwsh.
func pwshInline(args []string) string { return powershellArgs(args, false) }

// powershellInline is pwshInline for Windows PowerShell, which reads an
// argument that is no parameter as -Command.
func powershellInline(args []string) string { return powershellArgs(args, true) }

func powershellArgs(args []string, positionalIsCommand bool) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, ok := strings.CutPrefix(a, "--")
		if !ok {
			name, ok = strings.CutPrefix(a, "-")
		}
		if !ok {
			name, ok = strings.CutPrefix(a, "/")
		}
		if !ok || name == "" {
			if positionalIsCommand && a != "" {
				return a
			}
			return ""
		}
		name, _, _ = strings.Cut(strings.ToLower(name), ":")
		switch {
		case strings.HasPrefix("command", name), strings.HasPrefix("encodedcommand", name), name == "ec":
			return a
		case strings.HasPrefix("file", name):
			return "" // the script; what follows is its arguments
		case pwshValue(name):
			i++
		}
	}
	return ""
}

// pwshValue reports whether the PowerShell parameter name (a prefix, in
// lower case) takes a value.
func pwshValue(name string) bool {
	for _, p := range []string{"executionpolicy", "ex", "ep", "workingdirectory", "wd", "configurationname", "config", "outputformat", "of", "inputformat", "if", "windowstyle", "settingsfile", "custompipename", "version", "psconsolefile", "configurationfile", "encodedarguments", "ea", "w", "o", "inp", "settings"} {
		if name == p || (len(name) >= 3 && strings.HasPrefix(p, name)) {
			return true
		}
	}
	return false
}

func isHexDigit(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
