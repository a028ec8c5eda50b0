package runtimefetch

import (
	"strings"
	"testing"
	"unicode"
)

// TestInlineCode: an interpreter given its program in its arguments is
// refused with inline-code, in every spelling of the option (alone, in a
// cluster, --opt=value, attached); the same letters after the script are
// the script's arguments, and options that only look alike are not code.
func TestInlineCode(t *testing.T) {
	for _, c := range []struct {
		argv string // split on spaces
		opt  string // the option reported; "" for no inline-code refusal
	}{
		// node, nodejs, a versioned node
		{"node -e 1", "-e"},
		{"node --eval 1", "--eval"},
		{"node --eval=1", "--eval=…"},
		{"node -p 1", "-p"},
		{"node --print 1", "--print"},
		{"node --print=process.env", "--print=…"},
		{"node -pe 1", "-pe"},
		{"node --no-warnings -e 1", "-e"},
		{"node -r ./x.js -e 1", "-e"},
		{"node --require=./x.js --eval=1", "--eval=…"},
		{"node --import=data:text/javascript,evil()", "--import=…"},
		{"node --import data:text/javascript,evil() ${bundle}/s.js", "--import"},
		{"node -r DATA:,x ${bundle}/s.js", "-r"},
		{"nodejs -e 1", "-e"},
		{"node22 -e 1", "-e"},
		{"NODE.EXE -e 1", "-e"},
		{"${bundle}/bin/node -e 1", "-e"},
		{"node server.js -e 1", ""},
		{"node ${bundle}/server.js --eval=1 -p", ""},
		{"node -- ${bundle}/server.js -e", ""},
		{"node --env-file ${bundle}/.env ${bundle}/s.js -e", ""},
		{"node -r ./preload.js ${bundle}/s.js", ""},
		{"node --inspect=0 ${bundle}/s.js", ""},
		{"node - -e", ""},
		{"node --evaluate ${bundle}/s.js", ""},
		// bun, deno
		{"bun -e 1", "-e"},
		{"bun --eval=1", "--eval=…"},
		{"bun --print 1", "--print"},
		{"bun -p 1", "-p"},
		{"deno eval 1", "eval"},
		{"deno --eval 1", "--eval"},
		{"deno run npm:x@1.0.0 eval -e", ""},
		// python
		{"python -c 1", "-c"},
		{"python3 -c 1", "-c"},
		{"python3.12 -c 1", "-c"},
		{"python3 -Ic 1", "-Ic"},
		{"python3 -cimport\\tos", "-cimport\tos"},
		{"pypy -c 1", "-c"},
		{"py -3 -c 1", "-c"},
		{"python3 -W ignore -c 1", "-c"},
		{"python3 -X dev -c 1", "-c"},
		{"python3 ${bundle}/server.py -c 1", ""},
		{"python3 -u ${bundle}/server.py -c", ""},
		{"python3 -m notes -c 1", ""},
		{"python3 -Wc ${bundle}/s.py", ""},
		{"python3 -Xc ${bundle}/s.py", ""},
		// perl
		{"perl -e 1", "-e"},
		{"perl -E say", "-E"},
		{"perl -lne 1", "-lne"},
		{"perl -wE 1", "-wE"},
		{"perl -l015e 1", "-l015e"},
		{"perl -0x1fe ${bundle}/s.pl", ""},
		{"perl -0777e 1", "-0777e"},
		{"perl -pi -e 1", "-e"},
		{"perl -I lib -e 1", "-e"},
		{"perl5.36 -e 1", "-e"},
		{"perl -MEncode ${bundle}/s.pl", ""},
		{"perl -Ilib/e ${bundle}/s.pl", ""},
		{"perl -pie ${bundle}/s.pl", ""},
		{"perl ${bundle}/s.pl -e 1", ""},
		// ruby
		{"ruby -e 1", "-e"},
		{"ruby -ne 1", "-ne"},
		{"ruby -rjson -e 1", "-e"},
		{"ruby3.3 -e 1", "-e"},
		{"ruby -E UTF-8 ${bundle}/s.rb", ""},
		{"ruby -Ke ${bundle}/s.rb", ""},
		{"ruby -r yaml ${bundle}/s.rb -e", ""},
		// php
		{"php -r 1", "-r"},
		{"php -recho(1);", "-recho(1);"},
		{"php --run 1", "--run"},
		{"php -R 1", "-R"},
		{"php -B 1", "-B"},
		{"php -E 1", "-E"},
		{"php8.2 -r 1", "-r"},
		{"php -d x=1 -r 1", "-r"},
		{"php -f ${bundle}/s.php -r", ""},
		{"php ${bundle}/s.php -r 1", ""},
		{"php -c ${bundle}/php.ini ${bundle}/s.php", ""},
		// shells
		{"sh -c x", "-c"},
		{"bash -c x", "-c"},
		{"bash -lc x", "-lc"},
		{"bash -o pipefail -c x", "-c"},
		{"bash --norc -c x", "-c"},
		{"zsh -c x", "-c"},
		{"dash -ec x", "-ec"},
		{"fish --command=x", "--command=…"},
		{"fish -C x", "-C"},
		{"nu --commands x", "--commands"},
		{"cmd /c x", "/c"},
		{"cmd.exe /d /s /C x", "/C"},
		{"cmd /k x", "/k"},
		{"bash ${bundle}/start.sh -c x", ""},
		{"bash --rcfile -c ${bundle}/s.sh", ""},
		{"cmd /d", ""},
		{"cmd /copy", ""},
		// PowerShell
		{"pwsh -Command x", "-Command"},
		{"pwsh -c x", "-c"},
		{"pwsh -com x", "-com"},
		{"pwsh -NoProfile -NonInteractive -Command x", "-Command"},
		{"pwsh -EncodedCommand eA==", "-EncodedCommand"},
		{"pwsh -e eA==", "-e"},
		{"pwsh -ec eA==", "-ec"},
		{"pwsh --command x", "--command"},
		{"pwsh -Command:x", "-Command:x"},
		{"pwsh.exe -ExecutionPolicy Bypass -c x", "-c"},
		{"powershell /Command x", "/Command"},
		{"powershell.exe Get-Process", "Get-Process"},
		{"powershell -NoProfile Get-Process", "Get-Process"},
		{"pwsh -File ${bundle}/s.ps1 -c x", ""},
		{"pwsh ${bundle}/s.ps1 -Command x", ""},
		{"pwsh -ex Bypass -f ${bundle}/s.ps1", ""},
		{"powershell -File ${bundle}/s.ps1 -c x", ""},
		// Fail closed: an option the reader does not know may take the
		// next argument as its value, which is then no script.
		{"node --disable-proto delete -e 1", "-e"},
		{"node --report-dir /tmp -e 1", "-e"},
		{"node --max-http-header-size 9000 -e 1", "-e"},
		{"node --unhandled-rejections strict -e 1", "-e"},
		{"node --diagnostic-dir /tmp -p 1", "-p"},
		{"node --some-future-option x --eval=1", "--eval=…"},
		{"node --future-a --future-b -r -e x.js", "-e"},
		{"node --future-a -- -e 1", "-e"},
		{"node --no-warnings ${bundle}/s.js -e 1", ""},
		{"node --future-a=1 ${bundle}/s.js -e 1", ""},
		{"node --future-a x ${bundle}/s.js -e 1", ""},
		{"node --enable-source-maps ${bundle}/s.js -p", ""},
		{"ruby --disable gems -e 1", "-e"},
		{"ruby --encoding utf-8 -e 1", "-e"},
		{"ruby --future x -e 1", "-e"},
		{"ruby --disable=gems ${bundle}/s.rb -e 1", ""},
		{"php --define x=1 -r 1", "-r"},
		{"php --php-ini /x -r 1", "-r"},
		{"php --future x -r 1", "-r"},
		{"php -d allow_url_include=1 -d auto_prepend_file=data://text/plain;base64,PD8= ${bundle}/s.php", "allow_url_include=1"},
		{"php -d auto_prepend_file=/tmp/x.php ${bundle}/s.php", "auto_prepend_file=/tmp/x.php"},
		{"php -dauto_append_file=/tmp/x.php ${bundle}/s.php", "-dauto_append_file=/tmp/x.php"},
		{"php --define=AUTO_PREPEND_FILE=/tmp/x ${bundle}/s.php", "--define=…"},
		{"php -d memory_limit=1G ${bundle}/s.php -r", ""},
		// perl: -M, -m and -d: put their value into a use statement, -F
		// into split(…)
		{`perl -MPOSIX;system("id") ${bundle}/s.pl`, `-MPOSIX;system("id")`},
		{"perl -mPOSIX;system(1) ${bundle}/s.pl", "-mPOSIX;system(1)"},
		{"perl -M -e 1", "-e"},
		{"perl -wMstrict;exit ${bundle}/s.pl", "-wMstrict;exit"},
		{"perl -d:Foo;system(1) ${bundle}/s.pl", "-d:Foo;system(1)"},
		{"perl -d:Foo=}),system(1) ${bundle}/s.pl", "-d:Foo=}),system(1)"},
		{"perl -F/x/);system(1);(/ ${bundle}/s.pl", "-F/x/);system(1);(/"},
		{"perl -MList::Util=sum,max ${bundle}/s.pl", ""},
		{"perl -M-warnings ${bundle}/s.pl", ""},
		{"perl -d:NYTProf ${bundle}/s.pl", ""},
		{"perl -F, -an ${bundle}/s.pl", ""},
		// python modules that run code from their arguments
		{"python3 -m timeit -s 1 pass", "timeit"},
		{"python3 -m pdb -c !1 ${bundle}/s.py", "pdb"},
		{"python3 -m cProfile ${bundle}/s.py", "cProfile"},
		{"python3 -mprofile x", "-mprofile"},
		{"python3 -I -m trace --trace /tmp/x.py", "trace"},
		{"python3 -m code", "code"},
		{"python3 -m idlelib.idle -c 1", "idlelib.idle"},
		{"python3 -m mypkg.server", ""},
		{"python3 -m timeitx", ""},
		{"python3 ${bundle}/server.py -c cfg", ""},
		// interpreters fetched by a package runner
		{"npx -y node@20.11.1 -e 1", "-e"},
		{"npx -y -- tsx@4.0.0 -e 1", "-e"},
		{"npx -y --package=node@20.11.1 node -p 1", "-p"},
		{"bunx node@20.11.1 -e 1", "-e"},
		{"pnpm dlx ts-node@10.9.2 --eval 1", "--eval"},
		{"uvx python@3.12.1 -c 1", "-c"},
		{"uvx --from python==3.12.1 python -m timeit -s 1", "timeit"},
		{"pipx run --spec xonsh==0.18.0 xonsh -c x", "-c"},
		{"deno run -A npm:tsx@4.0.0 -e 1", "-e"},
		{"docker run -i python@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef python3 -c 1", "-c"},
		{"npx -y node@20.11.1 ${bundle}/s.js -e 1", ""},
		{"npx -y acme-server@1.0.0 -e 1", ""},
		{"uvx mcp-server-fetch==2025.4.7 -c 1", ""},
		// other interpreters
		{"lua -e 1", "-e"},
		{"lua5.4 -eprint(1)", "-eprint(1)"},
		{"luajit -l x -e 1", "-e"},
		{"lua ${bundle}/s.lua -e 1", ""},
		{"Rscript -e 1", "-e"},
		{"Rscript --vanilla ${bundle}/s.R -e 1", ""},
		{"R --no-save -e 1", "-e"},
		{"julia -e 1", "-e"},
		{"julia --project=. -E 1", "-E"},
		{"julia -t 4 ${bundle}/s.jl -e 1", ""},
		{"elixir -e 1", "-e"},
		{"elixir --eval 1", "--eval"},
		{"elixir -pa /x ${bundle}/s.exs --eval 1", ""},
		{"erl -noshell -eval halt().", "-eval"},
		{"erl -noshell -s myserver start -eval 1", "-eval"},
		{"erl -noshell -run os cmd id", "-run"},
		{"erl -noshell -s myserver start -extra -eval", ""},
		{"bb -e 1", "-e"},
		{"bb (println 1)", "(println"},
		{"bb ${bundle}/s.clj -e 1", ""},
		{"ts-node -e 1", "-e"},
		{"ts-node -P tsconfig.json -e 1", "-e"},
		{"ts-node ${bundle}/s.ts -e 1", ""},
		{"tsx -e 1", "-e"},
		{"tsx --tsconfig x.json --eval 1", "--eval"},
		{"tsx ${bundle}/s.ts -e 1", ""},
		{`awk BEGIN{system("id")}`, `BEGIN{system("id")}`},
		{"gawk -F: -v x=1 {print}", "{print}"},
		{"gawk -e BEGIN{} -f ${bundle}/s.awk", "-e"},
		{"gawk -W source=BEGIN{} -f ${bundle}/s.awk", "source=BEGIN{}"},
		{"awk -f ${bundle}/s.awk /tmp/in", ""},
		{"mawk -F , -f${bundle}/s.awk /tmp/in", ""},
		{"groovy -e 1", "-e"},
		// Not interpreters read here: their own rules apply.
		{"env node -e 1", ""},
		{"busybox sh -c x", ""},
		{"${bundle}/bin/server -e 1 -c 2", ""},
		{"npx -y a@1.0.0 -e 1", ""},
	} {
		argv := strings.Fields(c.argv)
		for i := range argv {
			argv[i] = strings.ReplaceAll(argv[i], `\t`, "\t")
		}
		_, err := Read(argv[0], argv[1:])
		ce, _ := err.(*CommandError)
		if c.opt == "" {
			if ce != nil && ce.Rule == RuleInlineCode {
				t.Errorf("%s: refused as inline code: %v", c.argv, err)
			}
			continue
		}
		if ce == nil || ce.Rule != RuleInlineCode || ce.Field != "args" {
			t.Errorf("%s: %v, want [inline-code]", c.argv, err)
			continue
		}
		if !strings.Contains(ce.Message, quoteOpt(c.opt)) || !strings.Contains(ce.Message, "ship the code as a file in the bundle") {
			t.Errorf("%s: message %q lacks %s or the fix", c.argv, ce.Message, quoteOpt(c.opt))
		}
		if strings.ContainsFunc(ce.Message, unicode.IsControl) {
			t.Errorf("%s: message has a control character: %q", c.argv, ce.Message)
		}
	}
	// A long option's value (the code) is not repeated.
	_, err := Read("node", []string{"--eval=require('child_process').exec('curl evil')"})
	if err == nil || strings.Contains(err.Error(), "child_process") {
		t.Fatalf("node --eval=…: %v", err)
	}
}

// TestGitIsRefused: git fetches code; it has no form berth accepts.
func TestGitIsRefused(t *testing.T) {
	for _, argv := range [][]string{
		{"git", "clone", "https://github.com/acme/x", "/tmp/x"},
		{"git"},
		{"GIT.EXE", "pull"},
		{"${bundle}/bin/git", "fetch"},
	} {
		_, err := Read(argv[0], argv[1:])
		ce, _ := err.(*CommandError)
		if ce == nil || ce.Rule != RuleForm || ce.Field != "command" || !strings.Contains(ce.Message, "ship that code in the bundle") {
			t.Errorf("%q: %v, want [%s] with the fix", argv, err, RuleForm)
		}
	}
}

// readsOperand are the interpreters whose first operand is no script:
// awk's is its program, and erl has none (its flags run to -extra).
var readsOperand = setOf("awk", "gawk", "mawk", "nawk", "goawk", "original-awk", "erl")

// FuzzInline: the inline-code reader never panics; the option it reports
// is one of the arguments, and never one after the script: behind a plain
// script path, no argument is the interpreter's (PowerShell 5 aside, which
// reads that argument as a command, and readsOperand).
func FuzzInline(f *testing.F) {
	for _, s := range []string{
		"node\x00-pe\x001", "node\x00--import=data:x", "python3\x00-Ic\x001", "perl\x00-l015e\x001", "perl\x00-pie\x00x",
		"ruby\x00-rjson\x00-e\x001", "php\x00-d\x00x\x00-r\x001", "bash\x00-o\x00pipefail\x00-c\x00x", "cmd\x00/d\x00/C\x00x",
		"pwsh\x00-ex\x00Bypass\x00-c\x00x", "powershell\x00x", "deno\x00eval\x001", "bun\x00--eval=1", "fish\x00-C\x00x",
		"node\x00--report-dir\x00/tmp\x00-e\x001", "perl\x00-MPOSIX;exit", "php\x00-d\x00auto_prepend_file=x", "python3\x00-m\x00timeit",
		"awk\x00-F:\x00{print}", "bb\x00(+ 1)", "erl\x00-eval\x00x", "julia\x00-t\x004\x00-e\x001", "ruby\x00--disable\x00gems\x00-e\x001",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, argv string) {
		parts := strings.Split(argv, "\x00")
		name := programName(parts[0])
		read, ok := inlineReaders[name]
		if !ok {
			return
		}
		args := parts[1:]
		if opt := read(args); opt != "" {
			found := false
			for _, a := range args {
				found = found || a == opt
			}
			if !found {
				t.Fatalf("%q: reported %q, which is none of the arguments", parts, opt)
			}
			err := readInline(name, parts[0], args)
			if ce, ok := err.(*CommandError); !ok || ce.Rule != RuleInlineCode || strings.ContainsFunc(ce.Message, unicode.IsControl) {
				t.Fatalf("%q: %v", parts, err)
			}
		}
		if name == "powershell" || name == "powershell_ise" || readsOperand[name] {
			return
		}
		if opt := read(append([]string{"${bundle}/server"}, args...)); opt != "" {
			t.Fatalf("%q behind a script: reported %q", parts, opt)
		}
	})
}
