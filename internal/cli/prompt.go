package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
)

// confirm asks a yes/no question on the terminal. Without a terminal the
// caller must have passed --yes; otherwise it is a usage error (exit 2).
func (a *app) confirm(question string, yes bool, flag string) error {
	if yes {
		return nil
	}
	if !a.isTerminal() {
		return usagef("not on a terminal, so berth cannot ask; pass %s to confirm", flag)
	}
	ok, err := a.ask(question)
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("not confirmed; nothing was changed")
	}
	return nil
}

// ask prints a yes/no question and reads one line of answer: true for y
// or yes, in any case.
func (a *app) ask(question string) (bool, error) {
	fmt.Fprintf(a.stdout, "%s [y/N] ", question)
	line, err := a.readLine()
	if err != nil && err != io.EOF {
		return false, err
	}
	s := strings.ToLower(strings.TrimSpace(line))
	return s == "y" || s == "yes", nil
}

// errInterrupted is the answer of a prompt cut short by Ctrl-C or
// SIGTERM.
var errInterrupted = errors.New("interrupted at the prompt; nothing was changed")

// readLine reads one line of stdin, or returns errInterrupted when the
// command's context ends first (Ctrl-C, SIGTERM): a read of a terminal
// does not return on a signal, so without this the command would wait on
// and its deferred clean-ups (temporary directories, locks) would never
// run. The read is then abandoned; the process is about to exit.
func (a *app) readLine() (string, error) {
	type answer struct {
		line string
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		line, err := bufio.NewReader(a.stdin).ReadString('\n')
		got <- answer{line, err}
	}()
	select {
	case r := <-got:
		return r.line, r.err
	case <-a.interrupted:
		fmt.Fprintln(a.stdout)
		return "", errInterrupted
	}
}
