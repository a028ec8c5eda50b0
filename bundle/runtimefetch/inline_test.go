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

// FuzzInline: the inline-code reader never panics; the option it reports
// is one of the arguments, and never one after the script: behind a plain
// script path, no argument is the interpreter's (PowerShell 5 aside, which
// reads that argument as a command).
func FuzzInline(f *testing.F) {
	for _, s := range []string{
		"node\x00-pe\x001", "node\x00--import=data:x", "python3\x00-Ic\x001", "perl\x00-l015e\x001", "perl\x00-pie\x00x",
		"ruby\x00-rjson\x00-e\x001", "php\x00-d\x00x\x00-r\x001", "bash\x00-o\x00pipefail\x00-c\x00x", "cmd\x00/d\x00/C\x00x",
		"pwsh\x00-ex\x00Bypass\x00-c\x00x", "powershell\x00x", "deno\x00eval\x001", "bun\x00--eval=1", "fish\x00-C\x00x",
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
		if name == "powershell" || name == "powershell_ise" {
			return
		}
		if opt := read(append([]string{"${bundle}/server"}, args...)); opt != "" {
			t.Fatalf("%q behind a script: reported %q", parts, opt)
		}
	})
}
