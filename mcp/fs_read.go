package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"io/fs"
	"math"
	"path"
	"strings"
	"syscall"

	"github.com/agentbe/agent-backend/internal/wspath"
)

// tailBlock is how much a tail read takes from the end of a file at a time.
const tailBlock = 64 << 10

func (t *fsTools) readText(ctx context.Context, a *args) (*CallToolResult, error) {
	p := a.str("path", true)
	head, _ := a.num("head")
	tail, _ := a.num("tail")
	if err := a.err(); err != nil {
		return errResult(err)
	}
	if head == 0 && tail == 0 {
		if text, ok := t.readDirect(ctx, p); ok {
			return textResult(text)
		}
	}
	real, err := t.validate(ctx, p)
	if err != nil {
		return errResult(err)
	}
	// The official server tests truthiness, so 0 means "not given".
	if head != 0 && tail != 0 {
		return errResult(&toolError{msg: "Cannot specify both head and tail parameters simultaneously"})
	}
	var text string
	switch {
	case tail != 0:
		text, err = t.tailFile(ctx, real, lineCount(tail))
	case head != 0:
		text, err = t.headFile(ctx, real, lineCount(head))
	default:
		text, err = t.readFileText(ctx, real)
	}
	if err != nil {
		return errResult(err)
	}
	return textResult(text)
}

// readDirect is the fast path of a whole-file read: it opens the resolved
// path straight through the workspace, whose jail already keeps every access
// inside, and skips validate's link walk. Anything unusual ("~", a
// Windows-style path, a missing file, a link leading out, a directory, a
// read error) reports !ok, and the validated path then produces the official
// server's exact result.
func (t *fsTools) readDirect(ctx context.Context, p string) (string, bool) {
	abs, ok := t.directPath(p)
	if !ok {
		return "", false
	}
	rc, err := t.ws.Open(ctx, abs)
	if err != nil {
		return "", false
	}
	defer rc.Close()
	b, err := readSized(rc)
	if err != nil {
		return "", false
	}
	return decodeUTF8Owned(b), true
}

// directPath is the path a fast path works on: p resolved lexically, for
// the plain paths (not "~", not Windows-style, not leaving the root) whose
// validated form can only differ through links, which the workspace
// follows itself.
func (t *fsTools) directPath(p string) (string, bool) {
	if p == "" || p[0] == '~' || windowsPath.MatchString(p) {
		return "", false
	}
	rel, err := wspath.Resolve(t.root, p)
	if err != nil {
		return "", false
	}
	return wspath.Join(t.root, rel), true
}

// readSized reads r to the end, sizing the buffer from Stat when r is a
// file (as os.ReadFile does), so a small file takes one read, not several.
func readSized(r io.Reader) ([]byte, error) {
	size := 512
	if st, ok := r.(interface{ Stat() (fs.FileInfo, error) }); ok {
		if fi, err := st.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() < 1<<30 {
			size = int(fi.Size()) + 1
		}
	}
	b := make([]byte, 0, size)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

// lineCount turns a JavaScript line limit into a count: the official loops
// run while count < n, so a fraction rounds up and anything below 1 is 0.
func lineCount(n float64) int {
	if n <= 0 || math.IsNaN(n) {
		return 0
	}
	if n > math.MaxInt32 {
		return math.MaxInt32
	}
	return int(math.Ceil(n))
}

// open opens real for reading, with Node's wording on failure.
func (t *fsTools) open(ctx context.Context, real string) (io.ReadCloser, error) {
	rc, err := t.ws.Open(ctx, real)
	if err != nil {
		if isErrno(err, syscall.EISDIR) {
			return nil, eisdirRead(err)
		}
		return nil, nodeErr(err, "open", real, "")
	}
	return rc, nil
}

func readErr(err error) error {
	if isErrno(err, syscall.EISDIR) {
		return eisdirRead(err)
	}
	if en, ok := errnoOf(err); ok {
		if txt, ok := nodeErrnoText[en]; ok {
			return &nodeError{code: txt[0], desc: txt[1], syscall: "read", err: err}
		}
	}
	return &toolError{msg: err.Error(), err: err}
}

// readAll reads a whole file.
func (t *fsTools) readAll(ctx context.Context, real string) ([]byte, error) {
	rc, err := t.open(ctx, real)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := readSized(rc)
	if err != nil {
		return nil, readErr(err)
	}
	return b, nil
}

func (t *fsTools) readFileText(ctx context.Context, real string) (string, error) {
	b, err := t.readAll(ctx, real)
	if err != nil {
		return "", err
	}
	return decodeUTF8(b), nil
}

// headFile returns the first n lines (split on "\n" only), joined with "\n"
// and without a final newline, reading no further than needed.
func (t *fsTools) headFile(ctx context.Context, real string, n int) (string, error) {
	// Even for n == 0 the file is opened, so a missing one is an error.
	rc, err := t.open(ctx, real)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	br := bufio.NewReaderSize(rc, 32<<10)
	var out []byte
	for lines := 0; lines < n; {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			if lines > 0 {
				out = append(out, '\n')
			}
			out = append(out, bytes.TrimSuffix(line, []byte{'\n'})...)
			lines++
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", readErr(err)
		}
	}
	return decodeUTF8(out), nil
}

// tailFile returns the last n lines of the file with CRLF turned into LF (a
// final newline counts as an empty last line), reading backwards from the
// end when the workspace's reader allows it.
func (t *fsTools) tailFile(ctx context.Context, real string, n int) (string, error) {
	fi, err := t.ws.Stat(ctx, real)
	if err != nil {
		return "", nodeErr(err, "stat", real, "")
	}
	size := fi.Size()
	if size == 0 {
		return "", nil
	}
	rc, err := t.open(ctx, real)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	if n == 0 {
		return "", nil
	}
	var data []byte
	if ra, ok := rc.(io.ReaderAt); ok && !fi.IsDir() {
		data, err = tailBytes(ctx, ra, size, n)
	} else {
		data, err = io.ReadAll(rc)
		if err == nil {
			data = afterNthNewlineFromEnd(data, n)
		}
	}
	if err != nil {
		return "", readErr(err)
	}
	return normalizeLineEndings(decodeUTF8(data)), nil
}

// tailBytes reads blocks from the end of ra until it has seen n newlines and
// returns the bytes after the n-th newline from the end (or all of them).
func tailBytes(ctx context.Context, ra io.ReaderAt, size int64, n int) ([]byte, error) {
	var buf []byte // the tail read so far, buf[0] at offset pos
	pos := size
	seen := 0
	for pos > 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		step := int64(tailBlock)
		if step > pos {
			step = pos
		}
		block := make([]byte, step)
		got, err := ra.ReadAt(block, pos-step)
		if err != nil && !(errors.Is(err, io.EOF) && int64(got) == step) {
			return nil, err
		}
		pos -= step
		for i := len(block) - 1; i >= 0; i-- {
			if block[i] == '\n' {
				seen++
				if seen == n {
					return append(block[i+1:], buf...), nil
				}
			}
		}
		buf = append(block, buf...)
	}
	return buf, nil
}

func afterNthNewlineFromEnd(b []byte, n int) []byte {
	seen := 0
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == '\n' {
			seen++
			if seen == n {
				return b[i+1:]
			}
		}
	}
	return b
}

// mediaTypes maps lower-cased extensions to the official server's MIME types.
var mediaTypes = map[string]string{
	".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
	".webp": "image/webp", ".bmp": "image/bmp", ".svg": "image/svg+xml",
	".mp3": "audio/mpeg", ".wav": "audio/wav", ".ogg": "audio/ogg", ".flac": "audio/flac",
}

func (t *fsTools) readMedia(ctx context.Context, a *args) (*CallToolResult, error) {
	_, real, err := t.pathArg(ctx, a)
	if err != nil {
		return errResult(err)
	}
	b, err := t.readAll(ctx, real)
	if err != nil {
		return errResult(err)
	}
	data := base64.StdEncoding.EncodeToString(b)
	mime := mediaTypes[strings.ToLower(path.Ext(real))]
	if mime == "" {
		mime = "application/octet-stream"
	}
	var item Content
	switch {
	case strings.HasPrefix(mime, "image/"), strings.HasPrefix(mime, "audio/"):
		item = Content{Type: mime[:strings.IndexByte(mime, '/')], Data: data, MimeType: mime}
	default:
		item = Content{Type: "resource", Resource: &ResourceContents{URI: fileURL(real), MimeType: mime, Blob: data}}
	}
	return &CallToolResult{Content: []Content{item}, StructuredContent: mediaStructured{Content: []Content{item}}}, nil
}

// mediaStructured is read_media_file's structuredContent: {"content": [item]}.
type mediaStructured struct {
	Content []Content `json:"content"`
}

// fileURL is Node's url.pathToFileURL(p).href for an absolute POSIX path.
func fileURL(p string) string {
	const hex = "0123456789ABCDEF"
	var sb strings.Builder
	sb.WriteString("file://")
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c <= 0x20 || c >= 0x7F || strings.IndexByte("\"#%<>?`{}\\", c) >= 0 {
			sb.WriteByte('%')
			sb.WriteByte(hex[c>>4])
			sb.WriteByte(hex[c&15])
			continue
		}
		sb.WriteByte(c)
	}
	return sb.String()
}

func (t *fsTools) readMultiple(ctx context.Context, a *args) (*CallToolResult, error) {
	paths := a.strs("paths", true, 1)
	if err := a.err(); err != nil {
		return errResult(err)
	}
	parts := make([]string, len(paths))
	for i, p := range paths {
		text, err := t.readOne(ctx, p)
		if err != nil {
			parts[i] = p + ": Error - " + err.Error()
			continue
		}
		parts[i] = p + ":\n" + text + "\n"
	}
	return textResult(strings.Join(parts, "\n---\n"))
}

func (t *fsTools) readOne(ctx context.Context, p string) (string, error) {
	real, err := t.validate(ctx, p)
	if err != nil {
		return "", err
	}
	return t.readFileText(ctx, real)
}
