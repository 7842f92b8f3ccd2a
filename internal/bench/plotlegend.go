package bench

import (
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// legend is the figure's key, one column of rows drawn top to bottom: a
// heading at the left edge, an entry as its thumbnail then its text. Unlike
// plot.Legend it is drawn beside the panels, never inside a data area.
type legend struct {
	style   text.Style
	entries []legendEntry
}

type legendEntry struct {
	text    string
	heading bool
	thumb   thumb
}

// Legend lengths: a row is rowSpacing times the font's height; headings
// after the first get headingGap above them.
const (
	rowSpacing  = 1.25
	headingGap  = 0.4 // of a row
	thumbWidth  = 22  // points
	entryIndent = 4   // points: an entry's thumbnail starts this far right of a heading
	textGap     = 4   // points between a thumbnail and its text
)

func newLegend(size vg.Length) legend {
	return legend{style: text.Style{
		Font:    font.From(plot.DefaultFont, size),
		Handler: plot.DefaultTextHandler,
		YAlign:  text.YCenter,
	}}
}

func (l *legend) heading(s string) {
	l.entries = append(l.entries, legendEntry{text: s, heading: true})
}

func (l *legend) add(s string, t thumb) {
	l.entries = append(l.entries, legendEntry{text: s, thumb: t})
}

func (l *legend) row() vg.Length { return vg.Length(rowSpacing) * l.style.FontExtents().Height }

func (l *legend) textX() vg.Length { return vg.Points(entryIndent + thumbWidth + textGap) }

// size is the width and height the rows take.
func (l *legend) size() (w, h vg.Length) {
	for i, e := range l.entries {
		x := l.textX()
		if e.heading {
			x = 0
			if i > 0 {
				h += vg.Length(headingGap) * l.row()
			}
		}
		w = max(w, x+l.style.Width(e.text))
		h += l.row()
	}
	return w, h
}

// draw draws the rows from the top left corner of at.
func (l *legend) draw(c draw.Canvas, at vg.Rectangle) {
	y := at.Max.Y
	for i, e := range l.entries {
		if e.heading && i > 0 {
			y -= vg.Length(headingGap) * l.row()
		}
		mid := y - l.row()/2
		if e.heading {
			c.FillText(l.style, vg.Point{X: at.Min.X, Y: mid}, e.text)
		} else {
			icon := draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{
				Min: vg.Point{X: at.Min.X + vg.Points(entryIndent), Y: mid - l.row()/2},
				Max: vg.Point{X: at.Min.X + vg.Points(entryIndent+thumbWidth), Y: mid + l.row()/2},
			}}
			e.thumb.Thumbnail(&icon)
			c.FillText(l.style, vg.Point{X: at.Min.X + l.textX(), Y: mid}, e.text)
		}
		y -= l.row()
	}
}
