package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/pool"
	"github.com/berth-mcp/berth/review"
)

func newAcceptCmd(a *app) *cobra.Command {
	opts := &acceptOptions{}
	cmd := &cobra.Command{
		Use:   "accept NAME",
		Short: "Review and accept a plugin's changed tools",
		Long: `Accept starts the plugin's servers in a workspace, shows every tool whose
definition (description, schemas, annotations, MCP Apps UI link) differs
from the surface pinned when the plugin was enabled, every tool added since,
and every MCP Apps UI template (ui://) whose contents changed or that was
not pinned, asks for
confirmation (on a terminal; otherwise --yes is required, exit 2), and
records the new surface. Until then those tools are withheld. A NAME that is
not enabled in the workspace is an error at once (exit 1): no server starts.`,
		Example: `  berth accept acme-notes
  berth accept acme-notes --yes --json`,
		Args: exactArgs(1, "one NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Ref = args[0]
			return runAccept(cmd.Context(), a, opts)
		},
	}
	workspaceFlag(cmd, &opts.Workspace)
	cmd.Flags().BoolVar(&opts.Yes, "yes", false, "accept without asking (required without a terminal)")
	a.jsonFlag(cmd, &opts.JSON, acceptJSON{})
	return cmd
}

// acceptOptions are the inputs of berth accept.
type acceptOptions struct {
	// Ref is the positional argument.
	Ref       string
	Workspace string
	Yes, JSON bool
}

func runAccept(ctx context.Context, a *app, opts *acceptOptions) error {
	name, _, err := parseRef(opts.Ref)
	if err != nil {
		return err
	}
	// A plugin that is not enabled has nothing to accept: say so
	// at once, from the state, without starting any server.
	if _, err := a.requireEnabled(opts.Workspace, name, "there is nothing to accept"); err != nil {
		return err
	}
	p, err := a.openPool(ctx, opts.Workspace, !opts.JSON)
	if err != nil {
		return err
	}
	defer p.Close()
	var changes []pool.ToolChange
	enabled := false
	for _, s := range p.Status() {
		if s.Plugin == name {
			enabled = true
			changes = append(changes, s.Changes...)
		}
	}
	if !enabled {
		return fmt.Errorf("%s is not enabled in %s, so there is nothing to accept (berth enable %s)", name, p.WorkspaceDir(), name)
	}
	if len(changes) == 0 {
		if opts.JSON {
			return writeJSON(a.stdout, acceptJSON{Accepted: []pool.ToolChange{}})
		}
		fmt.Fprintf(a.stdout, "Nothing to accept: the tools of %s match their pinned surface.\n", name)
		return nil
	}
	if !opts.JSON || !opts.Yes {
		a.showChanges(changes)
	}
	if err := a.confirm(fmt.Sprintf("Accept these %d change(s) of %s?", len(changes), name), opts.Yes, "--yes"); err != nil {
		return err
	}
	if err := p.Accept(ctx, name, changes); err != nil {
		return err
	}
	if opts.JSON {
		return writeJSON(a.stdout, acceptJSON{Accepted: changes})
	}
	fmt.Fprintf(a.stdout, "Accepted %d tool change(s) of %s; those tools are offered again.\n", len(changes), name)
	return nil
}

func (a *app) showChanges(changes []pool.ToolChange) {
	w := a.stdout
	for _, c := range changes {
		id := c.ID
		if id == "" {
			id = pool.ServerID(c.Plugin, c.Server)
		}
		if c.URI != "" {
			showTemplateChange(w, id, c)
			continue
		}
		if c.Kind == pool.ChangeAdded {
			fmt.Fprintf(w, "%s: new tool %s (not in the pinned surface)\n", id, review.PrintableLines(c.Tool))
		} else {
			fmt.Fprintf(w, "%s: %s changed since it was pinned\n  pinned: %s\n  now:    %s\n", id, review.PrintableLines(c.Tool), c.Pinned, c.Live)
		}
		d := c.Definition
		fmt.Fprintf(w, "  description:  %s\n", review.PrintableLines(d.Description))
		in, _ := json.Marshal(d.InputSchema)
		fmt.Fprintf(w, "  input schema: %s\n", review.PrintableLines(string(in)))
		if d.OutputSchema != nil {
			out, _ := json.Marshal(d.OutputSchema)
			fmt.Fprintf(w, "  output schema: %s\n", review.PrintableLines(string(out)))
		}
		fmt.Fprintf(w, "  annotations:  %s\n", annotationText(d.Annotations))
	}
}

// showTemplateChange shows a changed or new MCP Apps UI template.
func showTemplateChange(w io.Writer, id string, c pool.ToolChange) {
	if c.Kind == pool.ChangeAdded {
		fmt.Fprintf(w, "%s: new UI template %s (not in the pinned surface)\n  now:    %s\n", id, review.PrintableLines(c.URI), c.Live)
	} else {
		fmt.Fprintf(w, "%s: UI template %s changed since it was pinned\n  pinned: %s\n  now:    %s\n", id, review.PrintableLines(c.URI), c.Pinned, c.Live)
	}
	if t := c.Template; t != nil {
		fmt.Fprintf(w, "  mime type:    %s\n  size:         %d bytes\n", review.PrintableLines(t.MIMEType), t.Size)
		if t.UI != nil {
			ui, _ := json.Marshal(t.UI)
			fmt.Fprintf(w, "  _meta.ui:     %s\n", review.PrintableLines(string(ui)))
		}
	}
}

// acceptJSON is what accept --json prints.
type acceptJSON struct {
	Accepted []pool.ToolChange `json:"accepted"`
}
