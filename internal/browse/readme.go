package browse

import (
	"bytes"
	"html/template"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// A README is the publisher's text: goldmark renders it without raw HTML
// (goldmark's default drops it), images become links (a page of berth's
// loads nothing from elsewhere), and bluemonday's policy for user content
// then keeps only plain markup: links to http, https and mailto only
// (javascript: and data: URLs are dropped), each with rel="nofollow
// noreferrer noopener" and opened in a new tab; no script, style, iframe,
// form or image.

var markdown = goldmark.New(
	goldmark.WithExtensions(extension.GFM),
	goldmark.WithParserOptions(parser.WithASTTransformers(util.Prioritized(imagesToLinks{}, 100))),
)

var sanitizer = func() *bluemonday.Policy {
	p := bluemonday.UGCPolicy()
	p.AllowURLSchemes("http", "https", "mailto")
	p.RequireNoReferrerOnLinks(true)
	p.AddTargetBlankToFullyQualifiedLinks(true)
	return p
}()

// renderReadme renders Markdown to sanitized HTML.
func renderReadme(md string) template.HTML {
	if md == "" {
		return ""
	}
	var b bytes.Buffer
	if err := markdown.Convert([]byte(md), &b); err != nil {
		return template.HTML(template.HTMLEscapeString(md))
	}
	return template.HTML(sanitizer.SanitizeBytes(b.Bytes()))
}

// imagesToLinks replaces each image with a link to it, labelled
// "image: ALT", so the page requests nothing from the image's host.
type imagesToLinks struct{}

func (imagesToLinks) Transform(doc *ast.Document, reader text.Reader, pc parser.Context) {
	var images []*ast.Image
	ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if img, ok := n.(*ast.Image); ok && entering {
			images = append(images, img)
		}
		return ast.WalkContinue, nil
	})
	for _, img := range images {
		link := ast.NewLink()
		link.Destination = img.Destination
		link.Title = img.Title
		link.AppendChild(link, ast.NewString([]byte("image: ")))
		for c := img.FirstChild(); c != nil; {
			next := c.NextSibling()
			link.AppendChild(link, c)
			c = next
		}
		img.Parent().ReplaceChild(img.Parent(), img, link)
	}
}
