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
// returns the argument that gives the code, or "" when there is none. Only
// the interpreter's own options count: the first argument that is not one
// is the script (or the command of a shell), and what follows it belongs
// to the script. The readers fail closed: an option a reader does not know
// may take the next argument as its value, so that argument is never taken
// for the script, and every argument up to the first one that is surely
// the script is read (node --report-dir /tmp -e …).
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
	"tsx": tsxInline, "ts-node": tsNodeInline, "ts-node-esm": tsNodeInline,
	"lua": luaSpec.read, "luajit": luaSpec.read,
	"rscript": rscriptSpec.read, "r": rSpec.read,
	"julia":  juliaSpec.read,
	"elixir": elixirSpec.read, "iex": elixirSpec.read,
	"erl": erlInline,
	"bb":  bbSpec.read,
	"awk": awkSpec.read, "gawk": awkSpec.read, "mawk": awkSpec.read, "nawk": awkSpec.read, "goawk": awkSpec.read, "original-awk": awkSpec.read,
	"groovy": groovySpec.read,
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
func nodeInline(args []string) string { return nodeArgs(args, nodeValueOpts, nodeShortFlags) }

// nodeShortFlags are node's short options without a value (-e and -p
// aside).
var nodeShortFlags = setOf("-c", "-i", "-v", "-h")

// nodeFlags are node's long options known to take no value; a long
// option neither here nor in nodeValueOpts (nor --no-…) may take the next
// argument as its value.
var nodeFlags = setOf("--enable-source-maps", "--trace-warnings", "--trace-deprecation", "--throw-deprecation", "--pending-deprecation",
	"--preserve-symlinks", "--preserve-symlinks-main", "--abort-on-uncaught-exception", "--expose-gc", "--inspect", "--inspect-brk", "--inspect-wait",
	"--watch", "--watch-preserve-output", "--experimental-vm-modules", "--experimental-strip-types", "--experimental-transform-types",
	"--experimental-require-module", "--experimental-detect-module", "--experimental-wasm-modules", "--experimental-json-modules",
	"--experimental-websocket", "--experimental-sqlite", "--experimental-eventsource", "--experimental-permission", "--permission",
	"--allow-child-process", "--allow-worker", "--allow-wasi", "--allow-addons", "--frozen-intrinsics", "--zero-fill-buffers",
	"--insecure-http-parser", "--force-fips", "--enable-fips", "--use-openssl-ca", "--use-bundled-ca", "--use-system-ca", "--trace-uncaught",
	"--trace-exit", "--trace-sigint", "--trace-sync-io", "--trace-tls", "--report-on-fatalerror", "--report-uncaught-exception",
	"--report-on-signal", "--report-compact", "--cpu-prof", "--heap-prof", "--interactive", "--check", "--jitless", "--expose-internals")

// nodeArgs reads node's arguments, or those of a program that takes
// node's (tsx, ts-node), with the options that take a value and the short
// options that take none.
func nodeArgs(args []string, valueOpts, shortFlags set) string {
	pending := false // the argument may be the value of an unknown option
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !isOpt(a) {
			if pending {
				pending = false
				continue
			}
			return ""
		}
		if longInline(a, "--eval", "--print") {
			return a
		}
		name, val, hasVal := strings.Cut(a, "=")
		if valueOpts[name] {
			if !hasVal && i+1 < len(args) {
				val = args[i+1]
			}
			if nodeLoads[name] && strings.HasPrefix(strings.ToLower(strings.TrimSpace(val)), "data:") {
				return a
			}
			switch {
			case hasVal:
				pending = false
			case !pending:
				i++ // the value
			default:
				// this option may be the unknown option's value, and the
				// next argument then the script: it stays unsure
			}
			continue
		}
		if !strings.HasPrefix(a, "--") {
			if strings.ContainsAny(a[1:], "ep") {
				return a
			}
			pending = !shortFlags[a]
			continue
		}
		pending = !hasVal && !nodeFlags[name] && !strings.HasPrefix(name, "--no-")
	}
	return ""
}

// nodeLoads are the node options whose value is a module node loads.
var nodeLoads = setOf("-r", "--require", "--import", "--loader", "--experimental-loader")

// tsxInline: tsx takes node's options, and its own --tsconfig.
func tsxInline(args []string) string { return nodeArgs(args, tsxValueOpts, nodeShortFlags) }

var tsxValueOpts = func() set {
	s := setOf("--tsconfig")
	for k := range nodeValueOpts {
		s[k] = true
	}
	return s
}()

// tsNodeInline: ts-node -e, --eval, -p, --print, as node's.
func tsNodeInline(args []string) string {
	return nodeArgs(args, tsNodeValueOpts, setOf("-T", "-H", "-S", "-v", "-h", "-i"))
}

var tsNodeValueOpts = func() set {
	s := setOf("-r", "--require", "-C", "--compiler", "-P", "--project", "-O", "--compiler-options", "-I", "--ignore",
		"-D", "--ignore-diagnostics", "--cwd", "--dir", "--scope-dir", "--transpiler", "--compiler-host")
	for k := range nodeValueOpts {
		s[k] = true
	}
	return s
}()

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

// pythonCodeModules are the standard modules (and IPython) that run code
// given in their arguments or read from standard input (the MCP stream),
// or run a script or module named in their arguments: timeit -s CODE, pdb
// -c '!CODE', cProfile, profile and trace (-c CODE, any script), code and
// asyncio (consoles on stdin), idlelib -c CODE, runpy (any module), pickle
// (unpickling a file runs code), doctest (runs the examples of any file),
// IPython -c CODE. Compared in lower case, by the top-level package.
var pythonCodeModules = setOf("timeit", "pdb", "cprofile", "profile", "trace", "code", "asyncio", "idlelib", "runpy", "pickle", "ipython", "doctest")

// pythonInline: -c, alone or at the end of a cluster (-Ic, -cCODE), and
// -m with a module that runs code from its arguments (pythonCodeModules).
func pythonInline(args []string) string {
	c, mod, arg := pythonOption(args)
	if c != "" {
		return c
	}
	top, _, _ := strings.Cut(mod, ".")
	if mod != "" && pythonCodeModules[strings.ToLower(strings.TrimSpace(top))] {
		return arg
	}
	return ""
}

// pythonOption reads python's options before the script as python does
// (short options clustered: -Im pip, -mpip, -Ic; -X and -W and
// --check-hash-based-pycs take a value) and returns the first -c or -m:
// c is the argument that holds -c; for -m, mod is the module and arg the
// argument that names it (what follows are the module's arguments). All
// empty: neither comes before the script or stdin.
func pythonOption(args []string) (c, mod, arg string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !isOpt(a) {
			return "", "", ""
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
				return a, "", ""
			case 'X', 'W':
				if j == len(a)-1 {
					i++
				}
				j = len(a)
			case 'm':
				mod, arg = a[j+1:], a
				if mod == "" && i+1 < len(args) {
					mod, arg = args[i+1], args[i+1]
				}
				return "", mod, arg
			}
		}
	}
	return "", "", ""
}

// perlInline: -e and -E, alone or in a cluster (-lne, -wE); -M, -m and
// -d:Module whose value is more than a module name and an =list (perl
// puts it into a use statement: -M'POSIX;system(…)'); -F with a /pattern/
// (perl puts it into split(…)). Options that take the rest of their
// argument as a value end the cluster.
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
			case c == 'M' || c == 'm':
				// The value is attached (perl refuses -M alone).
				if !perlUseOK(strings.TrimPrefix(a[j+1:], "-"), false) {
					return a
				}
				break cluster
			case c == 'd':
				v := strings.TrimPrefix(a[j+1:], "t") // -dt: threads
				if (strings.HasPrefix(v, ":") || strings.HasPrefix(v, "=")) && !perlUseOK(strings.TrimPrefix(v[1:], "-"), true) {
					return a
				}
				break cluster
			case c == 'F':
				if v := a[j+1:]; v != "" && strings.IndexByte(`/'"`, v[0]) >= 0 && strings.IndexByte(v[1:], v[0]) >= 0 {
					return a
				}
				break cluster
			case strings.IndexByte("CDiIxV", c) >= 0:
				if j == len(a)-1 && c == 'I' {
					i++ // -I dir
				}
				break cluster
			}
		}
	}
	return ""
}

// perlUseOK reports whether v, the value of -M, -m or -d:, is a module
// name (word characters and ::) alone or followed by =list, which perl
// quotes (for -d: inside q{…}, so without braces). Anything else perl
// puts into a use statement as it is, where it runs as code.
func perlUseOK(v string, braces bool) bool {
	n := 0
	for n < len(v) && (isLetter(v[n]) || v[n] >= '0' && v[n] <= '9' || v[n] == '_' || v[n] == ':') {
		n++
	}
	if n == len(v) {
		return true
	}
	return v[n] == '=' && !(braces && strings.ContainsAny(v[n:], "{}"))
}

// rubyValueLong are ruby's long options that may take the next argument
// as their value.
var rubyValueLong = setOf("--encoding", "--external-encoding", "--internal-encoding", "--disable", "--enable", "--dump", "--backtrace-limit", "--parser", "--crash-report")

// rubyFlagLong are ruby's long options without a value.
var rubyFlagLong = setOf("--verbose", "--version", "--copyright", "--help", "--yydebug", "--jit", "--yjit", "--rjit")

// rubyInline: -e, alone or in a cluster (-ne). (-E is the encoding.)
func rubyInline(args []string) string {
	pending := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !isOpt(a) {
			if pending {
				pending = false
				continue
			}
			return ""
		}
		if strings.HasPrefix(a, "--") {
			name, _, hasVal := strings.Cut(a, "=")
			switch {
			case hasVal || rubyFlagLong[name] || strings.HasPrefix(name, "--disable-") || strings.HasPrefix(name, "--enable-"):
				pending = false
			case rubyValueLong[name] && !pending:
				i++
			default:
				pending = true
			}
			continue
		}
		skip := false
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
				skip = j == len(a)-1 && strings.IndexByte("CEIr", c) >= 0 // -I dir, -r lib
				break cluster
			}
		}
		switch {
		case skip && !pending:
			i++
		case skip:
			pending = true
		default:
			pending = false
		}
	}
	return ""
}

// phpInline: -r (--run) and the per-line code options -B, -R, -E
// (--process-begin, --process-code, --process-end), and -d (--define)
// with a setting that runs another file or a URL as code
// (auto_prepend_file, auto_append_file, allow_url_include).
func phpInline(args []string) string {
	pending := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !isOpt(a) {
			if pending {
				pending = false
				continue
			}
			return ""
		}
		if longInline(a, "--run", "--process-begin", "--process-code", "--process-end") {
			return a
		}
		if strings.HasPrefix(a, "--") {
			name, val, hasVal := strings.Cut(a, "=")
			switch {
			case name == "--define":
				arg := a
				if !hasVal && i+1 < len(args) {
					val, arg = args[i+1], args[i+1]
				}
				if phpCodeSetting(val) {
					return arg
				}
				if !hasVal && !pending {
					i++
				} else {
					pending = !hasVal
				}
			case name == "--file":
				if !pending {
					return "" // the script
				}
			case hasVal || phpFlagLong[name]:
				pending = false
			case phpValueLong[name] && !pending:
				i++
			default:
				pending = true
			}
			continue
		}
		switch a[1] {
		case 'r', 'B', 'R', 'E':
			return a
		case 'd':
			val, arg := a[2:], a
			if val == "" && i+1 < len(args) {
				val, arg = args[i+1], args[i+1]
			}
			if phpCodeSetting(val) {
				return arg
			}
		case 'f':
			if !pending {
				return "" // the script
			}
		}
		switch {
		case len(a) == 2 && strings.IndexByte("cdzFtSb", a[1]) >= 0 && !pending:
			i++
		case len(a) == 2 && strings.IndexByte("cdzFtSb", a[1]) >= 0:
			pending = true
		default:
			pending = false
		}
	}
	return ""
}

// phpValueLong are php's long options with a value, and phpFlagLong
// those without.
var (
	phpValueLong = setOf("--php-ini", "--zend-extension", "--process-file", "--server", "--docroot", "--bindpath", "--rf", "--rfunction", "--rc", "--rclass", "--re", "--rextension", "--rz", "--rzendextension", "--ri", "--rextinfo")
	phpFlagLong  = setOf("--no-php-ini", "--interactive", "--profile-info", "--hide-args", "--help", "--info", "--syntax-check", "--modules", "--strip", "--version", "--no-header", "--ini", "--syntax-highlight")
)

// phpCodeSettings are the php.ini settings that make php run another
// file, or code from a URL, with the script.
var phpCodeSettings = setOf("auto_prepend_file", "auto_append_file", "allow_url_include")

func phpCodeSetting(v string) bool {
	name, _, _ := strings.Cut(v, "=")
	return phpCodeSettings[strings.ToLower(strings.TrimSpace(name))]
}

// optSpec describes the options of an interpreter read by optSpec.read.
type optSpec struct {
	// code are options whose value is code: a long one also as
	// --opt=CODE, a short one (two bytes) also with the code attached.
	code set
	// values are options that take the next argument as a value.
	values set
	// flags are options known to take no value. Any other option may take
	// the next argument as its value.
	flags set
	// file are options whose value is the program's file (awk -f), after
	// which the operands are no program.
	file set
	// operandCode: without a file option, the first operand is the
	// program (awk 'BEGIN{…}').
	operandCode bool
	// exprOperand reports an operand that is an expression, not a file
	// (bb '(…)').
	exprOperand func(string) bool
	// codeValue reports a short option whose value, attached or the next
	// argument, is code (awk -W source=CODE).
	codeValue func(opt, val string) bool
}

func (s optSpec) read(args []string) string {
	pending, haveFile := false, false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" && !pending {
			if i+1 < len(args) && (s.operandCode && !haveFile || s.exprOperand != nil && s.exprOperand(args[i+1])) {
				return args[i+1]
			}
			return ""
		}
		if !isOpt(a) {
			if pending {
				pending = false
				continue
			}
			if s.operandCode && !haveFile || s.exprOperand != nil && s.exprOperand(a) {
				return a
			}
			return ""
		}
		name, _, hasVal := strings.Cut(a, "=")
		if !strings.HasPrefix(a, "--") {
			name, hasVal = a, false
		}
		if s.code[name] {
			return a
		}
		if len(a) > 2 && a[1] != '-' && s.code[a[:2]] {
			return a // -eCODE
		}
		if s.codeValue != nil {
			val, arg := a[min(len(a), 2):], a
			if val == "" && i+1 < len(args) {
				val, arg = args[i+1], args[i+1]
			}
			if s.codeValue(a[:min(len(a), 2)], val) {
				return arg
			}
		}
		attached := len(a) > 2 && a[1] != '-' // -F: or -fprog.awk, when -F and -f take a value
		switch {
		case s.file[name] && pending:
			// may be the unknown option's value: no file for sure
		case s.file[name]:
			haveFile = true
			if !hasVal {
				i++
			}
		case attached && s.file[a[:2]]:
			haveFile = haveFile || !pending
			pending = false
		case attached && s.values[a[:2]]:
			pending = false
		case hasVal || s.flags[name]:
			pending = false
		case s.values[name] && !pending:
			i++
		default:
			pending = true
		}
	}
	return ""
}

var (
	luaSpec     = optSpec{code: setOf("-e"), values: setOf("-l", "-j", "-b"), flags: setOf("-i", "-v", "-E", "-W", "-O")}
	rscriptSpec = optSpec{code: setOf("-e", "--expr"), flags: setOf("--verbose", "--vanilla", "--no-environ", "--no-site-file", "--no-init-file", "--no-restore", "--no-save", "--no-echo", "--slave", "--quiet", "-q", "--silent", "--save", "--restore")}
	rSpec       = optSpec{code: setOf("-e", "--expr"), file: setOf("-f", "--file"), values: setOf("-g", "--gui", "-d", "--debugger"), flags: rscriptSpec.flags}
	juliaSpec   = optSpec{code: setOf("-e", "--eval", "-E", "--print"), values: setOf("-L", "--load", "-J", "--sysimage", "-C", "--cpu-target", "-t", "--threads", "-p", "--procs", "--machine-file", "-H", "--home"),
		flags: setOf("-i", "-q", "--quiet", "-v", "--version", "-h", "--help", "--interactive")}
	elixirSpec = optSpec{code: setOf("-e", "--eval", "--rpc-eval", "--erl"), values: setOf("-r", "-pr", "-pa", "-pz", "--app", "--cookie", "--sname", "--name", "--boot", "--vm-args", "--pipe-to", "--logger-otp-reports", "--logger-sasl-reports", "--dot-iex", "--remsh"),
		flags: setOf("-v", "--version", "-h", "--help", "--no-halt", "--hidden", "--werl", "--detached")}
	bbSpec = optSpec{code: setOf("-e", "--eval"), values: setOf("-cp", "--classpath", "--config", "--deps-root", "--init", "--debug-port"), file: setOf("-f", "--file"),
		flags: setOf("--debug", "--prn", "--verbose", "-i", "-I", "--stream", "-o", "-O", "--version", "--help", "-h"), exprOperand: bbExpr}
	awkSpec = optSpec{code: setOf("-e", "--source"), values: setOf("-F", "--field-separator", "-v", "--assign", "-l", "--load", "-i", "--include", "-W"), file: setOf("-f", "--file", "-E", "--exec"),
		flags:       setOf("-b", "--characters-as-bytes", "-c", "--traditional", "-C", "--copyright", "-g", "--gen-pot", "-h", "--help", "-M", "--bignum", "-N", "--use-lc-numeric", "-n", "--non-decimal-data", "-O", "--optimize", "-P", "--posix", "-r", "--re-interval", "-s", "--no-optimize", "-S", "--sandbox", "-t", "--lint-old", "-V", "--version"),
		operandCode: true, codeValue: awkW}
	groovySpec = optSpec{code: setOf("-e"), values: setOf("-cp", "--classpath", "-classpath", "--encoding", "-c", "-b", "--basescript", "--configscript"), flags: setOf("-d", "--debug", "-v", "--version", "-h", "--help", "--compile-static", "--type-checked")}
)

// awkW reports gawk's -W source=CODE, by any prefix gawk accepts.
func awkW(opt, val string) bool {
	name, _, _ := strings.Cut(strings.TrimSpace(val), "=")
	return opt == "-W" && len(name) >= 2 && strings.HasPrefix("source", name)
}

// bbExpr reports a babashka operand that is an expression, which bb
// evaluates rather than runs as a file.
func bbExpr(a string) bool {
	a = strings.TrimSpace(a)
	return a != "" && strings.IndexByte("([{#'`@~^\"", a[0]) >= 0
}

// erlInline: erl -eval anywhere among its flags (erl reads flags up to
// -extra; the arguments between them are the flags' values, never a
// script), and -s, -run and -S calling a function of os or erl_eval,
// which run commands and code.
func erlInline(args []string) string {
	for i, a := range args {
		switch a {
		case "-extra":
			return ""
		case "-eval":
			return a
		case "-s", "-run", "-S":
			if i+1 < len(args) && (args[i+1] == "os" || args[i+1] == "erl_eval") {
				return a
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
