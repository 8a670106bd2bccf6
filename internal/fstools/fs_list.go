package fstools

import (
	"context"
	"errors"
	"io/fs"
	"math/big"
	"sort"
	"strconv"
	"strings"

	"github.com/agentbe/agent-backend/mcp"
)

// DirEntryReader is an optional Workspace extension: ReadDirEntries lists a
// directory's entries sorted by name with their types as lstat sees them
// (a symbolic link is never a directory), in one pass. Without it the tools
// call Lstat once per entry.
type DirEntryReader interface {
	ReadDirEntries(ctx context.Context, p string) ([]fs.DirEntry, error)
}

type dirent struct {
	name  string
	isDir bool
	link  bool
}

// readDir lists real with entry types; failures are worded as Node's
// scandir.
func (t *fsTools) readDir(ctx context.Context, real string) ([]dirent, error) {
	if dr, ok := t.ws.(DirEntryReader); ok {
		ents, err := dr.ReadDirEntries(ctx, real)
		if err != nil {
			return nil, nodeErr(err, "scandir", real, "")
		}
		out := make([]dirent, len(ents))
		for i, e := range ents {
			out[i] = dirent{name: e.Name(), isDir: e.IsDir(), link: e.Type()&fs.ModeSymlink != 0}
		}
		return out, nil
	}
	names, err := t.ws.ReadDir(ctx, real)
	if err != nil {
		return nil, nodeErr(err, "scandir", real, "")
	}
	out := make([]dirent, len(names))
	for i, n := range names {
		out[i].name = n
		if fi, err := t.ws.Lstat(ctx, joinRest(real, []string{n})); err == nil {
			out[i].isDir = fi.IsDir()
			out[i].link = fi.Mode()&fs.ModeSymlink != 0
		}
	}
	return out, nil
}

// readDirDirect is readDirect for a listing: any failure reports !ok, and
// the validated path then gives the official answer.
func (t *fsTools) readDirDirect(ctx context.Context, p string) ([]dirent, bool) {
	abs, ok := t.directPath(p)
	if !ok {
		return nil, false
	}
	ents, err := t.readDir(ctx, abs)
	return ents, err == nil
}

func (t *fsTools) listDirectory(ctx context.Context, a *args) (*mcp.CallToolResult, error) {
	p := a.str("path", true)
	if err := a.err(); err != nil {
		return errResult(err)
	}
	ents, ok := t.readDirDirect(ctx, p)
	if !ok {
		real, err := t.validate(ctx, p)
		if err != nil {
			return errResult(err)
		}
		if ents, err = t.readDir(ctx, real); err != nil {
			return errResult(err)
		}
	}
	var sb strings.Builder
	for i, e := range ents {
		if i > 0 {
			sb.WriteByte('\n')
		}
		if e.isDir {
			sb.WriteString("[DIR] ")
		} else {
			sb.WriteString("[FILE] ")
		}
		sb.WriteString(e.name)
	}
	return textResult(sb.String())
}

func (t *fsTools) listDirectoryWithSizes(ctx context.Context, a *args) (*mcp.CallToolResult, error) {
	p := a.str("path", true)
	sortBy := a.enum("sortBy", "name", "name", "size")
	if err := a.err(); err != nil {
		return errResult(err)
	}
	real, err := t.validate(ctx, p)
	if err != nil {
		return errResult(err)
	}
	ents, err := t.readDir(ctx, real)
	if err != nil {
		return errResult(err)
	}
	type sized struct {
		dirent
		size int64
	}
	list := make([]sized, len(ents))
	var files, dirs int
	var total int64
	for i, e := range ents {
		list[i].dirent = e
		// Sizes follow links, as stat does; one that cannot be followed
		// (dangling, or leading out of the workspace) counts as 0.
		if fi, err := t.ws.Stat(ctx, joinRest(real, []string{e.name})); err == nil {
			list[i].size = fi.Size()
		}
		if e.isDir {
			dirs++
		} else {
			files++
			total += list[i].size
		}
	}
	if sortBy == "size" {
		sort.SliceStable(list, func(i, j int) bool { return list[i].size > list[j].size })
	} else {
		sort.SliceStable(list, func(i, j int) bool { return localeCompare(list[i].name, list[j].name) < 0 })
	}
	var sb strings.Builder
	for _, e := range list {
		if e.isDir {
			sb.WriteString("[DIR] " + padEnd(e.name, 30) + " \n")
		} else {
			sb.WriteString("[FILE] " + padEnd(e.name, 30) + " " + padStart(formatSize(e.size), 10) + "\n")
		}
	}
	sb.WriteString("\nTotal: " + strconv.Itoa(files) + " files, " + strconv.Itoa(dirs) + " directories\n")
	sb.WriteString("Combined size: " + formatSize(total))
	return textResult(sb.String())
}

// padEnd and padStart pad to a width counted in UTF-16 units, as
// JavaScript does; longer strings are left as they are.
func padEnd(s string, w int) string {
	if n := utf16Len(s); n < w {
		return s + strings.Repeat(" ", w-n)
	}
	return s
}

func padStart(s string, w int) string {
	if n := utf16Len(s); n < w {
		return strings.Repeat(" ", w-n) + s
	}
	return s
}

// formatSize renders a byte count like the official server: "0 B", "N B"
// below 1 KiB, else the value in the largest unit (up to TB) with two
// decimals rounded half up, as Number.prototype.toFixed does.
func formatSize(n int64) string {
	if n <= 0 {
		if n == 0 {
			return "0 B"
		}
		return strconv.FormatInt(n, 10) + " B"
	}
	units := []string{"B", "KB", "MB", "GB", "TB"}
	i := 0
	for i < len(units)-1 && n >= int64(1)<<(10*(i+1)) {
		i++
	}
	if i == 0 {
		return strconv.FormatInt(n, 10) + " B"
	}
	// round(n*100 / 1024^i) half up, exactly.
	num := new(big.Int).Mul(big.NewInt(n), big.NewInt(200))
	den := new(big.Int).Lsh(big.NewInt(1), uint(10*i))
	num.Add(num, den)
	num.Quo(num, new(big.Int).Lsh(den, 1))
	s := num.String()
	for len(s) < 3 {
		s = "0" + s
	}
	return s[:len(s)-2] + "." + s[len(s)-2:] + " " + units[i]
}

// treeNode is one directory_tree entry.
type treeNode struct {
	name     string
	dir      bool
	children []treeNode
}

func (t *fsTools) directoryTree(ctx context.Context, a *args) (*mcp.CallToolResult, error) {
	p := a.str("path", true)
	excludes := a.strs("excludePatterns", false, 0)
	if err := a.err(); err != nil {
		return errResult(err)
	}
	if err := checkPatterns("", excludes); err != nil {
		return errResult(err)
	}
	real, err := t.validate(ctx, p)
	if err != nil {
		return errResult(err)
	}
	limit := t.outputLimit()
	w := &treeWalk{excludes: compileTreeExcludes(excludes), left: limit}
	tree, err := t.buildTree(ctx, w, real, "", 0)
	if err != nil {
		if err == errTreeOutput {
			return errResult(outputTooLarge("directory_tree", limit))
		}
		return errResult(err)
	}
	var sb strings.Builder
	writeTreeJSON(&sb, tree, "")
	return textResult(sb.String())
}

// treeWalk is the state of one directory_tree walk.
type treeWalk struct {
	excludes []*glob
	left     int64 // output bytes still allowed
}

var errTreeOutput = errors.New("directory_tree output over the limit")

// checkPatterns bounds the glob patterns of one call together.
func checkPatterns(pattern string, excludes []string) error {
	n := len(pattern)
	for _, x := range excludes {
		n += len(x)
	}
	if n > maxPatternBytes {
		return &toolError{msg: "Pattern too long: the patterns of one call may hold at most " +
			strconv.Itoa(maxPatternBytes) + " bytes together"}
	}
	return nil
}

// buildTree lists dir recursively. Directories are those lstat reports, so
// a symbolic link (even one to a directory, even a loop) is a file and is
// never followed. It descends at most maxWalkDepth levels and stops once
// the JSON it would produce exceeds the read limit (errTreeOutput).
func (t *fsTools) buildTree(ctx context.Context, w *treeWalk, dir, rel string, depth int) ([]treeNode, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if depth >= maxWalkDepth {
		return nil, tooDeep(dir)
	}
	ents, err := t.readDir(ctx, dir)
	if err != nil {
		return nil, err
	}
	out := make([]treeNode, 0, len(ents))
	for _, e := range ents {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		erel := e.name
		if rel != "" {
			erel = rel + "/" + e.name
		}
		if treeExcluded(erel, w.excludes) {
			continue
		}
		// What writeTreeJSON writes for the node, children aside.
		if w.left -= int64(len(e.name) + 16*depth + 64); w.left < 0 {
			return nil, errTreeOutput
		}
		n := treeNode{name: e.name, dir: e.isDir}
		if e.isDir {
			n.children, err = t.buildTree(ctx, w, joinRest(dir, []string{e.name}), erel, depth+1)
			if err != nil {
				return nil, err
			}
		}
		out = append(out, n)
	}
	return out, nil
}

// treeExcluded applies directory_tree's exclude rules: a pattern with "*"
// is a glob on the relative path; any other also matches as a name or
// sub-path at any depth.
func treeExcluded(rel string, excludes []*glob) bool {
	for _, g := range excludes {
		if g.match(rel) {
			return true
		}
	}
	return false
}

// compileTreeExcludes compiles directory_tree's patterns: one with "*" is
// used as it is, any other also as "**/p" and "**/p/**".
func compileTreeExcludes(patterns []string) []*glob {
	var out []*glob
	for _, p := range patterns {
		out = append(out, compileGlob(p))
		if !strings.Contains(p, "*") {
			out = append(out, compileGlob("**/"+p), compileGlob("**/"+p+"/**"))
		}
	}
	return out
}

func compileGlobs(patterns []string) []*glob {
	out := make([]*glob, len(patterns))
	for i, p := range patterns {
		out[i] = compileGlob(p)
	}
	return out
}

// writeTreeJSON writes nodes as JSON.stringify(tree, null, 2) does.
func writeTreeJSON(sb *strings.Builder, nodes []treeNode, indent string) {
	if len(nodes) == 0 {
		sb.WriteString("[]")
		return
	}
	in1 := indent + "  "
	in2 := in1 + "  "
	sb.WriteString("[\n")
	for i, n := range nodes {
		sb.WriteString(in1 + "{\n")
		sb.WriteString(in2 + `"name": ` + jsJSONString(n.name))
		if n.dir {
			sb.WriteString(",\n" + in2 + `"type": "directory",` + "\n" + in2 + `"children": `)
			writeTreeJSON(sb, n.children, in2)
			sb.WriteString("\n")
		} else {
			sb.WriteString(",\n" + in2 + `"type": "file"` + "\n")
		}
		sb.WriteString(in1 + "}")
		if i < len(nodes)-1 {
			sb.WriteString(",")
		}
		sb.WriteString("\n")
	}
	sb.WriteString(indent + "]")
}

// jsJSONString quotes s as JSON.stringify does (no HTML escaping, short
// escapes for \b \f \n \r \t, lower-case \u00xx for other controls).
func jsJSONString(s string) string {
	const hex = "0123456789abcdef"
	var sb strings.Builder
	sb.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			sb.WriteString(`\"`)
		case '\\':
			sb.WriteString(`\\`)
		case '\b':
			sb.WriteString(`\b`)
		case '\f':
			sb.WriteString(`\f`)
		case '\n':
			sb.WriteString(`\n`)
		case '\r':
			sb.WriteString(`\r`)
		case '\t':
			sb.WriteString(`\t`)
		default:
			if r < 0x20 {
				sb.WriteString(`\u00` + string(hex[r>>4]) + string(hex[r&15]))
			} else {
				sb.WriteRune(r)
			}
		}
	}
	sb.WriteByte('"')
	return sb.String()
}

func (t *fsTools) searchFiles(ctx context.Context, a *args) (*mcp.CallToolResult, error) {
	p := a.str("path", true)
	pattern := a.str("pattern", true)
	excludes := a.strs("excludePatterns", false, 0)
	if err := a.err(); err != nil {
		return errResult(err)
	}
	if err := checkPatterns(pattern, excludes); err != nil {
		return errResult(err)
	}
	real, err := t.validate(ctx, p)
	if err != nil {
		return errResult(err)
	}
	ents, err := t.readDir(ctx, real)
	if err != nil {
		return errResult(err)
	}
	var results []string
	limit := t.outputLimit()
	sw := &searchWalk{pattern: compileGlob(pattern), excludes: compileGlobs(excludes), left: limit,
		visits: maxWalkEntries, results: &results}
	if err := t.search(ctx, sw, real, "", ents, 0); err != nil {
		if err == errSearchOutput {
			return errResult(outputTooLarge("search_files", limit))
		}
		return errResult(err)
	}
	if len(results) == 0 {
		return textResult("No matches found")
	}
	return textResult(strings.Join(results, "\n"))
}

// searchWalk is the state of one search_files walk.
type searchWalk struct {
	pattern  *glob
	excludes []*glob
	left     int64 // output bytes still allowed
	visits   int   // entries still allowed
	results  *[]string
}

var errSearchOutput = errors.New("search_files output over the limit")

// search walks depth first in name order. Symbolic links are matched when
// their target stays inside the workspace and exists (the others are
// skipped silently), and are never descended, so link loops cannot recurse.
// A sub-directory that cannot be read is skipped; one more than
// maxWalkDepth levels down fails the call, as do more than maxWalkEntries
// entries and output over the read limit.
func (t *fsTools) search(ctx context.Context, w *searchWalk, root, rel string, ents []dirent, depth int) error {
	for _, e := range ents {
		if err := ctx.Err(); err != nil {
			return err
		}
		if w.visits--; w.visits < 0 {
			return tooManyEntries(root)
		}
		erel := e.name
		if rel != "" {
			erel = rel + "/" + e.name
		}
		full := joinRest(root, []string{erel})
		if e.link {
			target, err := t.ws.RealPath(ctx, full)
			if err != nil {
				continue
			}
			if _, err := t.ws.Lstat(ctx, target); err != nil {
				continue
			}
		}
		excluded := false
		for _, x := range w.excludes {
			if x.match(erel) {
				excluded = true
				break
			}
		}
		if excluded {
			continue
		}
		if w.pattern.match(erel) {
			if w.left -= int64(len(full) + 1); w.left < 0 {
				return errSearchOutput
			}
			*w.results = append(*w.results, full)
		}
		if e.isDir {
			if depth+1 >= maxWalkDepth {
				return tooDeep(full)
			}
			sub, err := t.readDir(ctx, full)
			if err != nil {
				continue
			}
			if err := t.search(ctx, w, root, erel, sub, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}
