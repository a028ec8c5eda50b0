package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/berth-mcp/berth/marketplace"
	"github.com/berth-mcp/berth/review"
)

type showVersion struct {
	Version     string             `json:"version"`
	Status      marketplace.Status `json:"status"`
	Reason      string             `json:"reason,omitempty"`
	Replacement string             `json:"replacement,omitempty"`
	Released    time.Time          `json:"released"`
	Digest      string             `json:"digest"`
	Picked      bool               `json:"picked"`
	Skipped     string             `json:"skipped,omitempty"`
}

type showOutput struct {
	Catalog  *marketplace.CatalogInfo `json:"catalog"`
	Plugin   *marketplace.Plugin      `json:"plugin"`
	Versions []showVersion            `json:"versions"`
	// Install is the version berth install NAME would pick; "" when none.
	Install string `json:"install"`
	// Shown is the version whose review is shown.
	Shown         string             `json:"shown"`
	Review        *review.Disclosure `json:"review"`
	Tools         []marketplace.Tool `json:"tools"`
	ContextTokens int                `json:"contextTokens"`
}

func (a *app) showCommand() *cobra.Command {
	var catalog string
	var asJSON bool
	cmd := &cobra.Command{
		Use: "show NAME[@VERSION]",
		Example: `  berth show acme-notes
  berth show acme-notes@1.4.2 --json`,
		Short: "Show a catalog plugin: its review, signers and versions (offline)",
		Long: `Show prints everything to know before installing a plugin, from the
verified copy of its catalog: the review summary in the words of berth
review (the catalog's claim, computed from the bundle at publication;
install checks it against the real bundle), the signers the catalog allows
for it, every version with its status and reason, the version berth
install NAME would pick and why each other is skipped, and the context
cost of the tools the curator lists. With @VERSION it shows that
version's review. Show never downloads a bundle, starts anything, or
writes, and needs no network. A name in several catalogs needs --catalog.`,
		Args: exactArgs(1, "NAME[@VERSION]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, version, err := parseRef(args[0])
			if err != nil {
				return err
			}
			c, err := a.catalogs()
			if err != nil {
				return err
			}
			if catalog == "" {
				cats, err := c.Lookup(name)
				if err != nil {
					return err
				}
				switch len(cats) {
				case 0:
					return fmt.Errorf("%w: no catalog lists %s (berth search %s looks for similar names; berth marketplace update refreshes the catalogs)", marketplace.ErrNoPlugin, name, name)
				case 1:
					catalog = cats[0]
				default:
					return usagef("%s is in several catalogs (%s); berth does not guess: pass --catalog NAME", name, strings.Join(cats, ", "))
				}
			} else if err := marketplace.CheckName(catalog); err != nil {
				return usagef("--catalog: %v", err)
			}
			p, ci, err := c.Plugin(catalog, name)
			if err != nil {
				return err
			}
			ro, err := a.resolveOptions()
			if err != nil {
				return err
			}
			res, rerr := marketplace.Resolve(p, "", ro)
			if rerr != nil && res == nil {
				return rerr
			}
			out := showOutput{Catalog: ci, Plugin: p, Versions: []showVersion{}}
			if res.Chosen != nil {
				out.Install = res.Chosen.Version
			}
			for _, cand := range res.Candidates {
				v := cand.Version
				out.Versions = append(out.Versions, showVersion{Version: v.Version, Status: v.Status, Reason: v.Reason, Replacement: v.Replacement, Released: v.Released, Digest: v.Digest, Picked: cand.Chosen, Skipped: cand.Skipped})
			}
			shown := res.Chosen
			if version != "" {
				if shown = p.Version(version); shown == nil {
					var vs []string
					for _, v := range out.Versions {
						vs = append(vs, v.Version)
					}
					return fmt.Errorf("%w: catalog %s has no version %s of %s (it has %s)", marketplace.ErrNoPlugin, catalog, version, name, strings.Join(vs, ", "))
				}
			}
			if shown == nil && len(p.Versions) > 0 {
				shown = res.Candidates[0].Version // the highest, to show what it would do
			}
			out.Shown = shown.Version
			out.Review = shown.Summary.Disclosure(p, shown)
			out.Tools = shown.Summary.Tools
			if out.Tools == nil {
				out.Tools = []marketplace.Tool{}
			}
			out.ContextTokens = marketplace.EstimateTokens(shown.Summary.Tools)
			if asJSON {
				return writeJSON(a.stdout, out)
			}
			return a.writeShow(&out)
		},
	}
	cmd.Flags().StringVar(&catalog, "catalog", "", "the catalog to show it from (needed when several list it)")
	a.jsonFlag(cmd, &asJSON, showOutput{})
	return cmd
}

func (a *app) writeShow(out *showOutput) error {
	w := a.stdout
	p, ci := out.Plugin, out.Catalog
	a.printStale([]*marketplace.CatalogInfo{ci})
	fmt.Fprintf(w, "%s, from catalog %s (tier %s)\n", p.Name, ci.Name, p.Tier)
	if len(p.Tags) > 0 {
		fmt.Fprintf(w, "  tags: %s\n", strings.Join(p.Tags, ", "))
	}
	fmt.Fprintln(w, "\nSigners the catalog allows for it (a bundle signed by anyone else is refused):")
	for _, s := range p.Signers {
		fmt.Fprintf(w, "  %s\n", review.Printable(s.String()))
	}
	fmt.Fprintln(w, "\nVersions:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, v := range out.Versions {
		status := string(v.Status)
		if v.Reason != "" {
			status += ": " + v.Reason
		}
		if v.Replacement != "" {
			status += " (use " + v.Replacement + " instead)"
		}
		note := "skipped: " + v.Skipped
		if v.Picked {
			note = "<- berth install " + p.Name + " picks this"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", v.Version, v.Released.Format("2006-01-02"), review.Printable(status), review.Printable(note))
	}
	tw.Flush()
	if out.Install == "" {
		fmt.Fprintf(w, "berth install %s would pick no version: each is skipped for the reason shown.\n", p.Name)
	}
	fmt.Fprintf(w, "\nReview of %s, as the catalog states it (berth install checks it against the bundle and refuses a difference):\n\n", out.Shown)
	if err := out.Review.WriteText(w); err != nil {
		return err
	}
	fmt.Fprintln(w)
	switch len(out.Tools) {
	case 0:
		fmt.Fprintln(w, "Tools: the curator lists none, so berth cannot estimate their context cost before you install.")
	default:
		fmt.Fprintf(w, "Tools the curator lists (%d), about %d tokens of context:\n", len(out.Tools), out.ContextTokens)
		for _, t := range out.Tools {
			line := "  " + t.Server + "__" + t.Name
			if t.Description != "" {
				line += ": " + shorten(t.Description, 70)
			}
			if an := t.Annotations; an != nil && an.DestructiveHint != nil && *an.DestructiveHint {
				line += " (destructive)"
			}
			fmt.Fprintln(w, review.Printable(line))
		}
	}
	return nil
}
