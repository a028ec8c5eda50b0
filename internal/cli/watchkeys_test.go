package cli

import "github.com/rogpeppe/go-internal/testscript"

// watchkeysCmd: watchkeys COMMAND [SHOWN KEY]... runs COMMAND (a shell
// command line) on a pseudo-terminal that script(1) makes and, for each
// pair, waits until SHOWN is on the terminal (after what the last pair
// waited for) and then presses KEY, one key without Enter, as a person
// would in a one-key loop; then it waits for COMMAND to end and prints
// everything the terminal showed. KEY is one character, or ^C.
func watchkeysCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args)%2 != 1 {
		ts.Fatalf("usage: watchkeys COMMAND [SHOWN KEY]...")
	}
	p := startScript(ts, "watchkeys", args[0], "USER=watcher")
	from := 0
	for i := 1; i < len(args); i += 2 {
		want, key := args[i], args[i+1]
		from = p.waitFor(want, from)
		if key == "^C" {
			key = "\x03"
		}
		p.send(key)
	}
	p.finish()
}
