package browse

import (
	"html/template"

	"github.com/berth-mcp/berth/marketplace"
	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/review"
)

// reviewView is a disclosure's lines (review.Lines) grouped for a page:
// the fields under the title, then sections, each a heading with items,
// each item with its fields.
type reviewView struct {
	Title, Description string
	Fields             []reviewField
	Sections           []reviewSection
}

type reviewSection struct {
	Heading string
	Items   []reviewItem
}

type reviewItem struct {
	Text   string
	Fields []reviewField
}

type reviewField struct {
	Label  string
	Values []string
}

func groupReview(lines []review.Line) *reviewView {
	rv := &reviewView{}
	var fields *[]reviewField = &rv.Fields
	for _, l := range lines {
		switch l.Kind {
		case review.LineTitle:
			rv.Title = l.Text
		case review.LineDescription:
			rv.Description = l.Text
		case review.LineHeading:
			rv.Sections = append(rv.Sections, reviewSection{Heading: l.Text})
			fields = nil
		case review.LineItem:
			if len(rv.Sections) == 0 {
				rv.Sections = append(rv.Sections, reviewSection{})
			}
			sec := &rv.Sections[len(rv.Sections)-1]
			sec.Items = append(sec.Items, reviewItem{Text: l.Text})
			fields = &sec.Items[len(sec.Items)-1].Fields
		case review.LineField:
			if fields == nil {
				// A field right under a heading (It declares: tools …).
				sec := &rv.Sections[len(rv.Sections)-1]
				sec.Items = append(sec.Items, reviewItem{})
				fields = &sec.Items[len(sec.Items)-1].Fields
			}
			if l.Label == "" && len(*fields) > 0 {
				last := &(*fields)[len(*fields)-1]
				last.Values = append(last.Values, l.Text)
			} else {
				*fields = append(*fields, reviewField{Label: l.Label, Values: []string{l.Text}})
			}
		}
	}
	return rv
}

// pluginPage is a plugin page's content.
type pluginPage struct {
	Show    *marketplace.Showing
	Review  *reviewView
	Signers []string
	// Install is the command to copy; "" when no version can be installed.
	Install string
	// Elsewhere are the other catalogs that list the name.
	Elsewhere    []string
	Readme       template.HTML
	Icon         bool
	Verification *marketplace.Verification
	Installed    []installed
	Updated      string
}

func (s *Site) pluginPage(snap *snapshot, cv *catalogView, p *catalog.Plugin, version string) (*pluginPage, error) {
	sh, err := marketplace.Show(p, cv.Info, version, s.o.Resolve)
	if err != nil {
		return nil, err
	}
	pp := &pluginPage{Show: sh, Review: groupReview(sh.Review.Lines()), Readme: renderReadme(p.Readme), Icon: p.IconPNG() != nil,
		Verification: cv.Verification, Installed: snap.installedOf(p)}
	for _, sg := range p.Signers {
		pp.Signers = append(pp.Signers, sg.String())
	}
	listed := snap.listedIn[p.Name]
	for _, c := range listed {
		if c != cv.Info.Name {
			pp.Elsewhere = append(pp.Elsewhere, c)
		}
	}
	pp.Install = sh.InstallCommand(len(listed) > 1)
	return pp, nil
}
