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
	line, err := bufio.NewReader(a.stdin).ReadString('\n')
	if err != nil && err != io.EOF {
		return false, err
	}
	s := strings.ToLower(strings.TrimSpace(line))
	return s == "y" || s == "yes", nil
}
