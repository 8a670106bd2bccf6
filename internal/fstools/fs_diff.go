package fstools

import (
	"context"
	"strconv"
	"strings"
)

// maxDiffWork bounds the Myers search (diagonals visited, which is also the
// number of path nodes allocated). A change too large for it (tens of
// thousands of lines rewritten) is shown as one block: the common leading
// and trailing lines as context, every other old line removed and every
// other new line added. jsdiff would find a finer diff in quadratic time.
const maxDiffWork = 2 << 20

// The edit_file diff reproduces jsdiff's createTwoFilesPatch (the library
// the official server uses) byte for byte: the same Myers variant with the
// same tie-breaking, 4 lines of context, hunk counts always printed and
// "\ No newline at end of file" markers.

// diffComponent is a run of lines that are common, added or removed.
type diffComponent struct {
	count          int
	added, removed bool
	prev           *diffComponent
}

type diffPath struct {
	oldPos int
	last   *diffComponent
}

// lineTokens splits s into lines that keep their "\n" (the last one may
// lack it); an empty s has no lines.
func lineTokens(s string) []string {
	if s == "" {
		return nil
	}
	toks := strings.SplitAfter(s, "\n")
	if toks[len(toks)-1] == "" {
		toks = toks[:len(toks)-1]
	}
	return toks
}

// diffLines returns the components that turn oldT into newT: jsdiff's
// answer, or coarseDiff's when that would cost more than maxDiffWork. It
// fails only when ctx is done.
func diffLines(ctx context.Context, oldT, newT []string) ([]diffComponent, error) {
	work := 0
	oldLen, newLen := len(oldT), len(newT)
	extract := func(p *diffPath, diagonal int) int {
		oldPos := p.oldPos
		newPos := oldPos - diagonal
		common := 0
		for newPos+1 < newLen && oldPos+1 < oldLen && oldT[oldPos+1] == newT[newPos+1] {
			newPos++
			oldPos++
			common++
		}
		if common > 0 {
			p.last = &diffComponent{count: common, prev: p.last}
		}
		p.oldPos = oldPos
		return newPos
	}
	addTo := func(p *diffPath, added, removed bool, inc int) *diffPath {
		l := p.last
		if l != nil && l.added == added && l.removed == removed {
			return &diffPath{oldPos: p.oldPos + inc, last: &diffComponent{count: l.count + 1, added: added, removed: removed, prev: l.prev}}
		}
		return &diffPath{oldPos: p.oldPos + inc, last: &diffComponent{count: 1, added: added, removed: removed, prev: l}}
	}

	maxEdit := oldLen + newLen
	offset := maxEdit + 1
	best := make([]*diffPath, 2*maxEdit+3)
	best[offset] = &diffPath{oldPos: -1}
	newPos := extract(best[offset], 0)
	if best[offset].oldPos+1 >= oldLen && newPos+1 >= newLen {
		return buildComponents(best[offset].last), nil
	}
	minDiag, maxDiag := -maxEdit-1, maxEdit+1
	for editLen := 1; editLen <= maxEdit; editLen++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if work > maxDiffWork {
			return coarseDiff(oldT, newT), nil
		}
		for d := max(minDiag, -editLen); d <= min(maxDiag, editLen); d += 2 {
			work++
			removePath, addPath := best[offset+d-1], best[offset+d+1]
			if removePath != nil {
				best[offset+d-1] = nil
			}
			canAdd := false
			if addPath != nil {
				np := addPath.oldPos - d
				canAdd = np >= 0 && np < newLen
			}
			canRemove := removePath != nil && removePath.oldPos+1 < oldLen
			if !canAdd && !canRemove {
				best[offset+d] = nil
				continue
			}
			var base *diffPath
			if !canRemove || (canAdd && removePath.oldPos < addPath.oldPos) {
				base = addTo(addPath, true, false, 0)
			} else {
				base = addTo(removePath, false, true, 1)
			}
			newPos = extract(base, d)
			if base.oldPos+1 >= oldLen && newPos+1 >= newLen {
				return buildComponents(base.last), nil
			}
			best[offset+d] = base
			if base.oldPos+1 >= oldLen {
				maxDiag = min(maxDiag, d-1)
			}
			if newPos+1 >= newLen {
				minDiag = max(minDiag, d+1)
			}
		}
	}
	return coarseDiff(oldT, newT), nil // not reached: maxEdit edits always suffice
}

// coarseDiff is the diff of last resort: common leading lines, then every
// other old line removed, every other new line added, then common trailing
// lines. It costs linear time.
func coarseDiff(oldT, newT []string) []diffComponent {
	pre := 0
	for pre < len(oldT) && pre < len(newT) && oldT[pre] == newT[pre] {
		pre++
	}
	suf := 0
	for suf < len(oldT)-pre && suf < len(newT)-pre && oldT[len(oldT)-1-suf] == newT[len(newT)-1-suf] {
		suf++
	}
	var out []diffComponent
	if pre > 0 {
		out = append(out, diffComponent{count: pre})
	}
	if n := len(oldT) - pre - suf; n > 0 {
		out = append(out, diffComponent{count: n, removed: true})
	}
	if n := len(newT) - pre - suf; n > 0 {
		out = append(out, diffComponent{count: n, added: true})
	}
	if suf > 0 {
		out = append(out, diffComponent{count: suf})
	}
	return out
}

func buildComponents(last *diffComponent) []diffComponent {
	var rev []diffComponent
	for c := last; c != nil; c = c.prev {
		rev = append(rev, *c)
	}
	out := make([]diffComponent, len(rev))
	for i := range rev {
		out[i] = rev[len(rev)-1-i]
		out[i].prev = nil
	}
	return out
}

type hunk struct {
	oldStart, oldLines, newStart, newLines int
	lines                                  []string
}

// unifiedPatch is createTwoFilesPatch(name, name, oldStr, newStr,
// "original", "modified") with jsdiff's defaults.
func unifiedPatch(name, oldStr, newStr string) string {
	p, _ := unifiedPatchCtx(context.Background(), name, oldStr, newStr)
	return p
}

// unifiedPatchCtx is unifiedPatch that stops when ctx is done.
func unifiedPatchCtx(ctx context.Context, name, oldStr, newStr string) (string, error) {
	const context = 4
	oldT, newT := lineTokens(oldStr), lineTokens(newStr)
	comps, err := diffLines(ctx, oldT, newT)
	if err != nil {
		return "", err
	}

	type block struct {
		added, removed bool
		lines          []string
	}
	blocks := make([]block, 0, len(comps)+1)
	oi, ni := 0, 0
	for _, c := range comps {
		switch {
		case c.removed:
			blocks = append(blocks, block{removed: true, lines: oldT[oi : oi+c.count]})
			oi += c.count
		case c.added:
			blocks = append(blocks, block{added: true, lines: newT[ni : ni+c.count]})
			ni += c.count
		default:
			blocks = append(blocks, block{lines: newT[ni : ni+c.count]})
			ni += c.count
			oi += c.count
		}
	}
	blocks = append(blocks, block{}) // the empty sentinel jsdiff appends

	var hunks []hunk
	oldRangeStart, newRangeStart := 0, 0
	var cur []string
	oldLine, newLine := 1, 1
	prefixed := func(p string, lines []string) []string {
		out := make([]string, len(lines))
		for i, l := range lines {
			out[i] = p + l
		}
		return out
	}
	for i, b := range blocks {
		if b.added || b.removed {
			if oldRangeStart == 0 {
				oldRangeStart, newRangeStart = oldLine, newLine
				if i > 0 {
					prev := blocks[i-1].lines
					if len(prev) > context {
						prev = prev[len(prev)-context:]
					}
					cur = prefixed(" ", prev)
					oldRangeStart -= len(cur)
					newRangeStart -= len(cur)
				}
			}
			sign := "-"
			if b.added {
				sign = "+"
			}
			cur = append(cur, prefixed(sign, b.lines)...)
			if b.added {
				newLine += len(b.lines)
			} else {
				oldLine += len(b.lines)
			}
			continue
		}
		if oldRangeStart != 0 {
			if len(b.lines) <= context*2 && i < len(blocks)-2 {
				cur = append(cur, prefixed(" ", b.lines)...)
			} else {
				n := min(len(b.lines), context)
				cur = append(cur, prefixed(" ", b.lines[:n])...)
				hunks = append(hunks, hunk{
					oldStart: oldRangeStart, oldLines: oldLine - oldRangeStart + n,
					newStart: newRangeStart, newLines: newLine - newRangeStart + n,
					lines: cur,
				})
				oldRangeStart, newRangeStart, cur = 0, 0, nil
			}
		}
		oldLine += len(b.lines)
		newLine += len(b.lines)
	}

	var sb strings.Builder
	sb.WriteString("Index: " + name + "\n")
	sb.WriteString("===================================================================\n")
	sb.WriteString("--- " + name + "\toriginal\n")
	sb.WriteString("+++ " + name + "\tmodified\n")
	for _, h := range hunks {
		os, ns := h.oldStart, h.newStart
		if h.oldLines == 0 {
			os--
		}
		if h.newLines == 0 {
			ns--
		}
		sb.WriteString("@@ -" + strconv.Itoa(os) + "," + strconv.Itoa(h.oldLines) + " +" + strconv.Itoa(ns) + "," + strconv.Itoa(h.newLines) + " @@\n")
		for _, l := range h.lines {
			if strings.HasSuffix(l, "\n") {
				sb.WriteString(l)
			} else {
				sb.WriteString(l + "\n\\ No newline at end of file\n")
			}
		}
	}
	return sb.String(), nil
}

// fenceDiff wraps a patch in a ```diff fence longer than any run of
// backticks inside it.
func fenceDiff(patch string) string {
	longest, run := 0, 0
	for i := 0; i < len(patch); i++ {
		if patch[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	f := strings.Repeat("`", max(3, longest+1))
	return f + "diff\n" + patch + f + "\n\n"
}
