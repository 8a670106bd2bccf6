package fstools

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"syscall"

	"github.com/agentbe/agent-backend/internal/jsonraw"

	"github.com/agentbe/agent-backend/mcp"
)

func (t *fsTools) writeFile(ctx context.Context, a *args) (*mcp.CallToolResult, error) {
	p := a.str("path", true)
	content := a.bytes("content", true)
	if err := a.err(); err != nil {
		return errResult(err)
	}
	if abs, ok := t.directPath(p); ok {
		if w, ok := t.ws.(DirectWriter); ok {
			if done, err := w.WriteInDir(ctx, abs, content); done {
				if err != nil {
					return errResult(nodeErr(err, "open", abs, ""))
				}
				return textResult("Successfully wrote to " + p)
			}
		}
	}
	real, err := t.validate(ctx, p)
	if err != nil {
		return errResult(err)
	}
	if err := t.write(ctx, real, content); err != nil {
		return errResult(err)
	}
	return textResult("Successfully wrote to " + p)
}

// DirectWriter is an optional Workspace extension for write_file's common
// case. WriteInDir writes p (an absolute workspace path) only when its
// directory exists and p is a regular file (or absent, if the workspace
// can tell no other name matches it); otherwise it reports false having
// changed nothing, and write_file takes its general path, which checks
// each case as the official server does. data may alias the request's
// arguments: WriteInDir must neither modify it nor keep it after it
// returns. agentbe's Local implements it.
type DirectWriter interface {
	WriteInDir(ctx context.Context, p string, data []byte) (done bool, err error)
}

// write replaces real with content through the workspace's atomic Write,
// after the checks that give the official server's errors: a directory in
// the way, a missing or non-directory parent (the workspace would create
// missing parents; the official server does not).
func (t *fsTools) write(ctx context.Context, real string, content []byte) error {
	fi, err := t.ws.Stat(ctx, real)
	switch {
	case err == nil && fi.IsDir() && modernEra(ctx):
		return &toolError{msg: "Refusing to write: not a regular file: " + real}
	case err == nil && fi.IsDir():
		tmp := real + "." + randomHex() + ".tmp"
		return &nodeError{code: "EISDIR", desc: "illegal operation on a directory", syscall: "rename", path: tmp, dest: real}
	case err != nil:
		if err := t.requireParentDir(ctx, real, "open"); err != nil {
			return err
		}
	}
	if err := t.ws.Write(ctx, real, content); err != nil {
		return nodeErr(err, "open", real, "")
	}
	return nil
}

// requireParentDir fails like Node's syscall would when the parent of real
// is missing or not a directory.
func (t *fsTools) requireParentDir(ctx context.Context, real, syscallName string) error {
	if t.implicitDirs() {
		return nil
	}
	fi, err := t.ws.Stat(ctx, path.Dir(real))
	if err != nil {
		return nodeErr(err, syscallName, real, "")
	}
	if !fi.IsDir() {
		return &nodeError{code: "ENOTDIR", desc: "not a directory", syscall: syscallName, path: real, err: syscall.ENOTDIR}
	}
	return nil
}

// ImplicitDirs is an optional Workspace extension for stores whose
// directories exist implicitly (agentbe's Memory backend: a key "a/b" makes
// "a" a directory and Mkdir does nothing). When ImplicitDirs reports true,
// write_file and move_file skip the official server's "the parent
// directory must exist" checks, which such a store could never pass.
type ImplicitDirs interface {
	ImplicitDirs() bool
}

func (t *fsTools) implicitDirs() bool {
	d, ok := t.ws.(ImplicitDirs)
	return ok && d.ImplicitDirs()
}

func randomHex() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
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
	original := normalizeLineEndings(text)
	modified, err := applyEdits(ctx, original, edits, t.readLimit())
	if err != nil {
		return errResult(err)
	}
	patch, err := unifiedPatchCtx(ctx, real, original, modified)
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
		// Like the official server, the result is written with LF endings.
		if err := t.ws.Write(ctx, real, []byte(modified)); err != nil {
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

// applyEdits applies edits in order to content (LF endings). An edit whose
// text occurs is applied to its first occurrence, literally; otherwise a
// window of lines equal after trimming is replaced, re-indented the way the
// official server does. An edit that matches nowhere fails the whole call.
// Each edit costs time linear in the content, and all of them together may
// scan at most maxEditWorkFactor*limit bytes; the result may not grow past
// limit bytes, and ctx is checked between edits.
func applyEdits(ctx context.Context, content string, edits []edit, limit int64) (string, error) {
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
		indent := jsLeadingSpace(lines[i])
		newLines := strings.Split(newText, "\n")
		for j, nl := range newLines {
			if j == 0 {
				newLines[j] = indent + jsTrimStart(nl)
				continue
			}
			oldIndent := ""
			if j < len(oldLines) {
				oldIndent = jsLeadingSpace(oldLines[j])
			}
			newIndent := jsLeadingSpace(nl)
			if oldIndent != "" && newIndent != "" {
				rel := utf16Len(newIndent) - utf16Len(oldIndent)
				newLines[j] = indent + strings.Repeat(" ", max(0, rel)) + jsTrimStart(nl)
			}
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

func (t *fsTools) createDirectory(ctx context.Context, a *args) (*mcp.CallToolResult, error) {
	p, real, err := t.pathArg(ctx, a)
	if err != nil {
		return errResult(err)
	}
	if fi, err := t.ws.Stat(ctx, real); err == nil {
		if !fi.IsDir() {
			shown := real
			if modernEra(ctx) {
				shown = path.Base(real) // as the 2026-era reference names it
			}
			return errResult(&nodeError{code: "EEXIST", desc: "file already exists", syscall: "mkdir", path: shown, err: fs.ErrExist})
		}
		return textResult("Successfully created directory " + p)
	}
	if err := t.ws.Mkdir(ctx, real); err != nil {
		return errResult(nodeErr(err, "mkdir", real, ""))
	}
	return textResult("Successfully created directory " + p)
}

func (t *fsTools) moveFile(ctx context.Context, a *args) (*mcp.CallToolResult, error) {
	src := a.str("source", true)
	dst := a.str("destination", true)
	if err := a.err(); err != nil {
		return errResult(err)
	}
	realSrc, err := t.validate(ctx, src)
	if err != nil {
		return errResult(err)
	}
	realDst, err := t.validate(ctx, dst)
	if err != nil {
		return errResult(err)
	}
	if _, err := t.ws.Lstat(ctx, realDst); err == nil {
		return errResult(&toolError{msg: "Destination already exists: " + realDst})
	}
	renameErr := func(err error, en syscall.Errno) error {
		txt := nodeErrnoText[en]
		return &nodeError{code: txt[0], desc: txt[1], syscall: "rename", path: realSrc, dest: realDst, err: err}
	}
	if _, err := t.ws.Lstat(ctx, realSrc); err != nil {
		if en, ok := errnoOf(err); ok && nodeErrnoText[en][0] != "" {
			if modernEra(ctx) {
				// The 2026-era reference names the destination relative
				// to its directory here.
				txt := nodeErrnoText[en]
				return errResult(&nodeError{code: txt[0], desc: txt[1], syscall: "rename", path: realSrc, dest: path.Base(realDst), err: err})
			}
			return errResult(renameErr(err, en))
		}
		return errResult(nodeErr(err, "rename", realSrc, realDst))
	}
	// The workspace may create missing parents; Node's rename does not.
	if fi, err := t.ws.Stat(ctx, path.Dir(realDst)); !t.implicitDirs() && (err != nil || !fi.IsDir()) {
		en := syscall.ENOTDIR
		if err != nil {
			if e, ok := errnoOf(err); ok {
				en = e
			}
		}
		if nodeErrnoText[en][0] == "" {
			en = syscall.ENOENT
		}
		return errResult(renameErr(err, en))
	}
	if realDst == realSrc || strings.HasPrefix(realDst, realSrc+"/") {
		return errResult(renameErr(syscall.EINVAL, syscall.EINVAL))
	}
	if err := t.ws.Rename(ctx, realSrc, realDst); err != nil {
		return errResult(nodeErr(err, "rename", realSrc, realDst))
	}
	return textResult("Successfully moved " + src + " to " + dst)
}
