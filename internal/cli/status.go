package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/review"
)

func (a *app) statusCommand() *cobra.Command {
	var workspace string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Start the workspace's servers and report their state",
		Long: `Status opens the pool of a workspace (default: the current directory),
starts every enabled server, waits for each one's first start, and reports
its state (starting, running, failed, drifted, changed, stopped),
transport, tool count, uptime, restarts and last error, with the stderr
tail of failed servers, withheld tool changes and name collisions.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := a.openPool(cmd.Context(), workspace)
			if err != nil {
				return err
			}
			defer p.Close()
			sts := p.Status()
			if asJSON {
				if sts == nil {
					sts = []pool.ServerStatus{}
				}
				return writeJSON(a.stdout, statusJSON{Servers: sts, Workspace: p.WorkspaceDir()})
			}
			if len(sts) == 0 {
				fmt.Fprintf(a.stdout, "Nothing is enabled in %s. Enable a trusted plugin with: berth enable NAME\n", p.WorkspaceDir())
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SERVER\tSTATE\tTRANSPORT\tTOOLS\tUPTIME\tRESTARTS\tLAST ERROR")
			for _, s := range sts {
				up := "-"
				if !s.StartedAt.IsZero() {
					up = time.Since(s.StartedAt).Round(time.Second).String()
				}
				last := "-"
				if s.LastError != "" {
					last = oneLine(review.PrintableLines(s.LastError), 60)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%d\t%s\n", s.ID, s.State, orDash(string(s.Transport)), s.Tools, up, s.Restarts, last)
			}
			tw.Flush()
			for _, s := range sts {
				a.statusDetail(s)
			}
			return nil
		},
	}
	workspaceFlag(cmd, &workspace)
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"workspace", "servers": [...]} with every field`)
	return cmd
}

// statusDetail prints what the table cuts: whole errors, stderr tails,
// withheld changes and collisions.
func (a *app) statusDetail(s pool.ServerStatus) {
	w := a.stdout
	if s.LastError != "" && s.State != pool.StateRunning {
		fmt.Fprintf(w, "\n%s %s: %s\n", s.ID, s.State, review.PrintableLines(s.LastError))
		switch {
		case s.State == pool.StateFailed && !s.GaveUp:
			fmt.Fprintf(w, "  berth restarts it in %s (restart %d of %d).\n", time.Until(s.NextRestart).Round(100*time.Millisecond), s.RestartsInRow, pool.MaxRestarts)
		case s.State == pool.StateFailed:
			fmt.Fprintf(w, "  berth gave up; fix the cause, then run berth again. berth logs %s shows its stderr.\n", s.ID)
		}
		if len(s.StderrTail) > 0 && s.State == pool.StateFailed {
			tail := s.StderrTail
			if len(tail) > 10 {
				tail = tail[len(tail)-10:]
			}
			fmt.Fprintln(w, "  stderr (last lines):")
			for _, l := range tail {
				fmt.Fprintf(w, "    %s\n", review.PrintableLines(l))
			}
		}
	}
	if len(s.Changes) > 0 {
		fmt.Fprintf(w, "\n%s changed: %d tool(s) differ from the pinned surface and are withheld; review them with: berth accept %s\n", s.ID, len(s.Changes), s.Plugin)
		for _, c := range s.Changes {
			fmt.Fprintf(w, "  %s (%s)\n", review.PrintableLines(c.Tool), c.Kind)
		}
	}
	for _, n := range s.Collisions {
		fmt.Fprintf(w, "\n%s: the tool name %s is also another server's, so neither is offered; disable one of the plugins\n", s.ID, n)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine shortens s to one line of at most n characters.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// statusJSON is what status --json prints.
type statusJSON struct {
	Servers   []pool.ServerStatus `json:"servers"`
	Workspace string              `json:"workspace"`
}
