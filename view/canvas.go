package view

import "image"

// A canvas is one frame as a list of items for the view_draw kernel:
// filled rectangles and glyphs in layers drawn in order (the frame's
// background, panel backgrounds, what is drawn on them, marks over those,
// text), each layer one dispatch. Items of one layer are drawn in any
// order, so they must not overlap.
//
// The items buffer the kernel reads (all little-endian uint32):
//
//	[0..7]   the first item of each layer, then the end of the last
//	[8+4i..] item i: x | y<<16 (its top-left pixel),
//	         a rectangle's w | h<<16 or a glyph's index | scale<<16,
//	         its colour (red in the low byte, then green, blue, alpha),
//	         its kind (kindRect, kindGlyph)
type canvas struct {
	w, h   int
	layers [layerCount][][4]uint32
	full   bool // items were dropped: more than maxItems
}

// Layers, drawn in this order.
const (
	layerClear = iota // the frame's background
	layerBack         // panel and title bar backgrounds
	layerMark         // frames, bars, plot points, heatmap cells
	layerOver         // marks over those: outlines of cells, the tolerance mark
	layerText         // glyphs
	layerCount
)

// Item kinds.
const (
	kindRect  = 0
	kindGlyph = 1
)

const (
	headerWords = 8 // layerCount + 1, rounded up
	maxItems    = 32768
	// bandPixels caps the pixels of one rectangle item: bigger ones are cut
	// into bands, since one workgroup draws one item.
	bandPixels = 8192
)

// itemsBytes is the size of the items buffer.
const itemsBytes = 4 * (headerWords + 4*maxItems)

// color is 0xRRGGBB.
type color uint32

// rgba packs c as the kernel stores it: red in the low byte, alpha 255.
func (c color) rgba() uint32 {
	return uint32(c>>16&0xff) | uint32(c>>8&0xff)<<8 | uint32(c&0xff)<<16 | 0xff<<24
}

func newCanvas(w, h int) *canvas { return &canvas{w: w, h: h} }

func (c *canvas) add(layer int, it [4]uint32) {
	n := 0
	for _, l := range c.layers {
		n += len(l)
	}
	if n >= maxItems {
		c.full = true
		return
	}
	c.layers[layer] = append(c.layers[layer], it)
}

// rect fills r (clipped to the canvas) with col on layer.
func (c *canvas) rect(layer int, r image.Rectangle, col color) {
	r = r.Intersect(image.Rect(0, 0, c.w, c.h))
	if r.Empty() {
		return
	}
	band := max(1, bandPixels/r.Dx())
	for y := r.Min.Y; y < r.Max.Y; y += band {
		h := min(band, r.Max.Y-y)
		c.add(layer, [4]uint32{uint32(r.Min.X) | uint32(y)<<16, uint32(r.Dx()) | uint32(h)<<16, col.rgba(), kindRect})
	}
}

// frame draws a one-pixel outline of r.
func (c *canvas) frame(layer int, r image.Rectangle, col color) {
	c.rect(layer, image.Rect(r.Min.X, r.Min.Y, r.Max.X, r.Min.Y+1), col)
	c.rect(layer, image.Rect(r.Min.X, r.Max.Y-1, r.Max.X, r.Max.Y), col)
	c.rect(layer, image.Rect(r.Min.X, r.Min.Y, r.Min.X+1, r.Max.Y), col)
	c.rect(layer, image.Rect(r.Max.X-1, r.Min.Y, r.Max.X, r.Max.Y), col)
}

// text draws s from (x, y) at scale, one cell per rune, clipped to maxX
// (runes that would cross it are left out); it returns the x after the
// last rune drawn.
func (c *canvas) text(x, y, scale int, s string, col color, maxX int) int {
	for _, r := range s {
		if x+cellW*scale > maxX+scale { // the last column of a cell is spacing
			break
		}
		if r != ' ' && x >= 0 && y >= 0 && x < c.w && y < c.h {
			c.add(layerText, [4]uint32{uint32(x) | uint32(y)<<16, glyphIndex(r) | uint32(scale)<<16, col.rgba(), kindGlyph})
		}
		x += cellW * scale
	}
	return x
}

// words encodes the canvas as the items buffer.
func (c *canvas) words() []uint32 {
	out := make([]uint32, headerWords, headerWords+4*maxItems)
	n := 0
	for l, items := range c.layers {
		out[l] = uint32(n)
		for _, it := range items {
			out = append(out, it[:]...)
		}
		n += len(items)
	}
	out[layerCount] = uint32(n)
	return out
}

// rasterize draws the items buffer words into w×h pixels (packed as rgba
// gives them) the way shaders/view_draw.comp does, layer by layer: the
// reference the kernel is tested against.
func rasterize(words, font []uint32, w, h int) []uint32 {
	px := make([]uint32, w*h)
	put := func(x, y int, v uint32) {
		if x >= 0 && y >= 0 && x < w && y < h {
			px[y*w+x] = v
		}
	}
	for l := range layerCount {
		for i := words[l]; i < words[l+1]; i++ {
			it := words[headerWords+4*i : headerWords+4*i+4]
			x0, y0 := int(it[0]&0xffff), int(it[0]>>16)
			switch it[3] {
			case kindRect:
				for y := range int(it[1] >> 16) {
					for x := range int(it[1] & 0xffff) {
						put(x0+x, y0+y, it[2])
					}
				}
			case kindGlyph:
				g, s := int(it[1]&0xffff), int(it[1]>>16)
				bits := uint64(font[2*g]) | uint64(font[2*g+1])<<32
				for y := range glyphH * s {
					for x := range glyphW * s {
						if bits>>(glyphW*(y/s)+x/s)&1 != 0 {
							put(x0+x, y0+y, it[2])
						}
					}
				}
			}
		}
	}
	return px
}
