package fstools

import (
	"context"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentbe/agent-backend/internal/jsonraw"

	"github.com/agentbe/agent-backend/mcp"
)

// editRule is how edit_file re-indents a whitespace-tolerant match and
// which line endings it writes. Each MCP era follows the official
// filesystem server that serves it.
type editRule uint8

const (
	// editRule2025 (the 2025 era): the first replacement line takes the
	// indentation of the first matched file line; a later one keeps its own
	// unless both it and its oldText line are indented, when it gets the
	// first line's indentation plus the spaces it has beyond the oldText
	// line. The file is written with LF endings.
	editRule2025 editRule = iota
	// editRule2026 (the 2026-07-28 era): every replacement line gets the
	// indentation of the file line it replaces, shifted by the difference
	// between its own indentation and that of the oldText line matching
	// that file line (see reindentLine). The file is written back with the
	// line ending most of its line breaks used.
	editRule2026
)

// editRuleOf returns the rule of the era the call came in.
func editRuleOf(ctx context.Context) editRule {
	if modernEra(ctx) {
		return editRule2026
	}
	return editRule2025
}

func (t *fsTools) editFile(ctx context.Context, a *args) (*mcp.CallToolResult, error) {
	p := a.str("path", true)
	edits := a.edits("edits")
	dryRun := a.boolean("dryRun", false)
	if err := a.err(); err != nil {
		return errResult(err)
	}
	real, err := t.validate(ctx, p)
	if err != nil {
		return errResult(err)
	}
	text, err := t.readFileText(ctx, real)
	if err != nil {
		return errResult(err)
	}
	written, patch, err := editText(ctx, real, text, edits, t.readLimit(), editRuleOf(ctx))
	if err != nil {
		return errResult(err)
	}
	out := fenceDiff(patch)
	budget := t.lim.text()
	fits := jsonraw.EscapedLen(out, budget) <= budget
	if !fits && dryRun {
		return errResult(&toolError{msg: "Diff too large: the diff of these edits to " + real + " is over the " +
			strconv.Itoa(budget) + " bytes of text (JSON-escaped) one result can carry; nothing was written. " +
			"Make fewer or smaller edits per call."})
	}
	if !dryRun {
		if err := t.ws.Write(ctx, real, []byte(written)); err != nil {
			return errResult(nodeErr(err, "open", real, ""))
		}
	}
	if !fits {
		// The edit is done: say so rather than fail, without the diff.
		return textResult("The edits were applied to " + real + ", but their diff is over the " + strconv.Itoa(budget) +
			" bytes of text (JSON-escaped) one result can carry and is not shown. " +
			"Read the changed lines with read_text_file (head or tail).")
	}
	return textResult(out)
}

// editText applies edits to text, the decoded content of the file name,
// under rule. It returns what to write and the unified patch of the
// change, which (as the official server's) compares the two with CRLF
// turned into LF, whatever is written.
func editText(ctx context.Context, name, text string, edits []edit, limit int64, rule editRule) (written, patch string, err error) {
	crlf := rule == editRule2026 && predominantlyCRLF(text)
	original := normalizeLineEndings(text)
	modified, err := applyEdits(ctx, original, edits, limit, rule)
	if err != nil {
		return "", "", err
	}
	patch, err = unifiedPatchCtx(ctx, name, normalizeLineEndings(original), normalizeLineEndings(modified))
	if err != nil {
		return "", "", err
	}
	if crlf {
		if n := strings.Count(modified, "\n"); int64(len(modified)+n) > limit {
			return "", "", editTooLarge(limit)
		}
		modified = strings.ReplaceAll(modified, "\n", "\r\n")
	}
	return modified, patch, nil
}

// predominantlyCRLF reports whether more of text's line breaks are CRLF
// than a bare LF; a file with mixed endings is written back with the
// ending most of its lines have, LF on a tie.
func predominantlyCRLF(text string) bool {
	crlf := strings.Count(text, "\r\n")
	return crlf > strings.Count(text, "\n")-crlf
}

// applyEdits applies edits in order to content (LF endings). An edit whose
// text occurs is applied to its first occurrence, literally; otherwise a
// window of lines equal after trimming is replaced, re-indented by rule.
// An edit that matches nowhere fails the whole call. Each edit costs time
// linear in the content, and all of them together may scan at most
// maxEditWorkFactor*limit bytes; the result may not grow past limit bytes,
// and ctx is checked between edits.
func applyEdits(ctx context.Context, content string, edits []edit, limit int64, rule editRule) (string, error) {
	work := int64(0) // bytes of content scanned so far
	for _, e := range edits {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		if work += int64(len(content)); work > maxEditWorkFactor*limit {
			return "", &toolError{msg: "Too many edits: " + strconv.Itoa(len(edits)) + " edits of a " +
				strconv.Itoa(len(content)) + "-byte file exceed the work bound (edits × file size ≤ " +
				strconv.FormatInt(maxEditWorkFactor*limit, 10) + " bytes)"}
		}
		oldText := normalizeLineEndings(e.oldText)
		newText := normalizeLineEndings(e.newText)
		if i := strings.Index(content, oldText); i >= 0 {
			if int64(len(content)-len(oldText)+len(newText)) > limit {
				return "", editTooLarge(limit)
			}
			content = content[:i] + newText + content[i+len(oldText):]
			continue
		}
		oldLines := strings.Split(oldText, "\n")
		lines := strings.Split(content, "\n")
		i := indexTrimmedLines(lines, oldLines)
		if i < 0 {
			return "", &toolError{msg: "Could not find exact match for edit:\n" + e.oldText}
		}
		newLines := strings.Split(newText, "\n")
		// The lines kept around the window count against the limit first.
		budget := limit - int64(len(content))
		for _, l := range lines[i : i+len(oldLines)] {
			budget += int64(len(l)) + 1
		}
		reindent := reindent2025
		if rule == editRule2026 {
			reindent = reindent2026
		}
		if !reindent(newLines, lines, i, oldLines, budget) {
			return "", editTooLarge(limit)
		}
		repl := make([]string, 0, len(lines)-len(oldLines)+len(newLines))
		repl = append(repl, lines[:i]...)
		repl = append(repl, newLines...)
		repl = append(repl, lines[i+len(oldLines):]...)
		content = strings.Join(repl, "\n")
		if int64(len(content)) > limit {
			return "", editTooLarge(limit)
		}
	}
	return content, nil
}

// reindent2025 re-indents newLines in place by editRule2025 for the
// window lines[at:at+len(oldLines)] they replace. It reports false,
// leaving newLines partly changed, when they would take more than budget
// bytes (with their newlines).
func reindent2025(newLines, lines []string, at int, oldLines []string, budget int64) bool {
	indent := jsLeadingSpace(lines[at])
	for j, nl := range newLines {
		switch {
		case j == 0:
			nl = indent + jsTrimStart(nl)
		case j < len(oldLines):
			oldIndent, newIndent := jsLeadingSpace(oldLines[j]), jsLeadingSpace(nl)
			if oldIndent != "" && newIndent != "" {
				rel := max(0, utf16Len(newIndent)-utf16Len(oldIndent))
				if int64(len(indent))+int64(rel)+int64(len(nl)) > budget {
					return false
				}
				nl = indent + strings.Repeat(" ", rel) + jsTrimStart(nl)
			}
		}
		if budget -= int64(len(nl)) + 1; budget < -1 {
			return false
		}
		newLines[j] = nl
	}
	return true
}

// reindent2026 re-indents newLines in place by editRule2026 for the
// window lines[at:at+len(oldLines)] they replace: line j is placed like
// the file line matched by oldLines[j], and lines beyond oldText's length
// like its last line. It reports false, leaving newLines partly changed,
// when they would take more than budget bytes (with their newlines).
func reindent2026(newLines, lines []string, at int, oldLines []string, budget int64) bool {
	editUnit := indentUnitOf(oldLines, newLines)
	fileUnit := indentUnitOf(lines)
	for j, nl := range newLines {
		k := min(j, len(oldLines)-1)
		l, ok := reindentLine(nl, lines[at+k], oldLines[k], editUnit, fileUnit, budget)
		if !ok {
			return false
		}
		newLines[j] = l
		budget -= int64(len(l)) + 1
	}
	return true
}

// indentUnit is the unit in which some lines are indented: a tab, or a
// number of spaces; the zero value means none of the lines is indented.
type indentUnit struct {
	tab   bool
	width int // spaces; 1 for a tab; 0: no unit
}

func (u indentUnit) repeat(n int) string {
	if u.tab {
		return strings.Repeat("\t", n)
	}
	return strings.Repeat(" ", n*u.width)
}

// indentUnitOf returns the indentation unit of the lines of some groups:
// a tab when the indentation of any non-blank line has one, otherwise the
// narrowest indentation of a non-blank line counted in characters (each
// white space character, a no-break space too, counts as one space).
func indentUnitOf(groups ...[]string) indentUnit {
	narrowest := -1
	for _, lines := range groups {
		for _, l := range lines {
			body := jsTrimStart(l)
			if body == "" || len(body) == len(l) {
				continue // blank or not indented
			}
			indent := l[:len(l)-len(body)]
			if strings.IndexByte(indent, '\t') >= 0 {
				return indentUnit{tab: true, width: 1}
			}
			if n := utf8.RuneCountInString(indent); narrowest < 0 || n < narrowest {
				narrowest = n
			}
		}
	}
	if narrowest < 0 {
		return indentUnit{}
	}
	return indentUnit{width: narrowest}
}

// reindentLine re-indents line, a replacement line, for editRule2026: it
// gets the indentation of fileLine (the file line it replaces) plus or
// minus delta, the difference between line's indentation and that of
// oldLine (the oldText line that matched fileLine), counted in white
// space characters. A dedent stops at no indentation; a blank line is
// kept as given. When the edit and the file indent with different
// characters (one with tabs, the other with spaces), delta is counted in
// the edit's units and applied in the file's: four extra spaces in an
// edit indented by four become one tab in a tab-indented file. It reports
// false instead of building a line longer than budget bytes.
func reindentLine(line, fileLine, oldLine string, editUnit, fileUnit indentUnit, budget int64) (string, bool) {
	body := jsTrimStart(line)
	if body == "" {
		return line, int64(len(line)) <= budget
	}
	fileIndent := jsLeadingSpace(fileLine)
	newIndent := line[:len(line)-len(body)]
	fileN := utf8.RuneCountInString(fileIndent)
	delta := utf8.RuneCountInString(newIndent) - utf8.RuneCountInString(jsLeadingSpace(oldLine))
	if editUnit.width > 0 && fileUnit.width > 0 && editUnit.tab != fileUnit.tab {
		levels := delta / editUnit.width // truncated toward zero
		if levels >= 0 {
			if int64(len(fileIndent))+int64(levels)*int64(fileUnit.width)+int64(len(body)) > budget {
				return "", false
			}
			return fileIndent + fileUnit.repeat(levels) + body, true
		}
		return fitLine(runePrefix(fileIndent, max(0, fileN+levels*fileUnit.width))+body, budget)
	}
	if delta >= 0 {
		return fitLine(fileIndent+runeSuffix(newIndent, delta)+body, budget)
	}
	return fitLine(runePrefix(fileIndent, max(0, fileN+delta))+body, budget)
}

// fitLine reports whether l fits in budget bytes. The lines it checks are
// no longer than a file line plus an edit line, so building them first
// costs no more than the input.
func fitLine(l string, budget int64) (string, bool) {
	if int64(len(l)) > budget {
		return "", false
	}
	return l, true
}

// runePrefix returns the first n characters of s.
func runePrefix(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// runeSuffix returns the last n characters of s (n at most their number).
func runeSuffix(s string, n int) string {
	i := len(s)
	for ; n > 0 && i > 0; n-- {
		_, size := utf8.DecodeLastRuneInString(s[:i])
		i -= size
	}
	return s[i:]
}

func editTooLarge(limit int64) error {
	return &toolError{msg: "Edited file too large: the result would exceed the read limit of " +
		strconv.FormatInt(limit, 10) + " bytes"}
}

// indexTrimmedLines returns the first i at which lines[i:i+len(pat)] equal
// pat line by line after JavaScript trim(), or -1. It is Knuth-Morris-Pratt
// over lines, so a file of near-matches costs linear time, not
// len(lines)*len(pat).
func indexTrimmedLines(lines, pat []string) int {
	m := len(pat)
	if m > len(lines) {
		return -1
	}
	tp := make([]string, m)
	for i, p := range pat {
		tp[i] = jsTrim(p)
	}
	fail := make([]int, m) // fail[i]: longest proper border of tp[:i+1]
	for i, k := 1, 0; i < m; i++ {
		for k > 0 && tp[i] != tp[k] {
			k = fail[k-1]
		}
		if tp[i] == tp[k] {
			k++
		}
		fail[i] = k
	}
	for i, k := 0, 0; i < len(lines); i++ {
		l := jsTrim(lines[i])
		for k > 0 && l != tp[k] {
			k = fail[k-1]
		}
		if l == tp[k] {
			k++
		}
		if k == m {
			return i - m + 1
		}
	}
	return -1
}
