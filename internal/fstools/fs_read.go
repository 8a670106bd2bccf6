package fstools

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
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/agentbe/agent-backend/internal/readlimit"
	"github.com/agentbe/agent-backend/internal/wspath"

	"github.com/agentbe/agent-backend/internal/jsonraw"

	"github.com/agentbe/agent-backend/mcp"
)

// tailBlock is how much a tail read takes from the end of a file at a time.
const tailBlock = 64 << 10

func (t *fsTools) readText(ctx context.Context, a *args) (*mcp.CallToolResult, error) {
	p := a.str("path", true)
	head, _ := a.num("head")
	tail, _ := a.num("tail")
	if err := a.err(); err != nil {
		return errResult(err)
	}
	tool := a.tool
	budget := t.lim.text()
	// Nothing longer than the budget can fit: escaping only grows text.
	limit := min(t.readLimit(), int64(budget))
	if head == 0 && tail == 0 {
		if text, ok := t.readDirect(ctx, p, limit); ok {
			if jsonraw.EscapedLen(text, budget) > budget {
				real, _ := t.directPath(p)
				return errResult(textTooLarge(tool, real, int64(len(text)), budget, false))
			}
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
		text, err = t.tailFile(ctx, real, lineCount(tail), limit)
	case head != 0:
		text, err = t.headFile(ctx, real, lineCount(head), limit)
	default:
		var b []byte
		if b, err = t.readAllRaw(ctx, real, limit); err == nil {
			text = decodeUTF8Owned(b)
		}
	}
	var ol *overLimit
	switch {
	case errors.As(err, &ol):
		if limit < t.readLimit() {
			return errResult(textTooLarge(tool, real, ol.Size, budget, head != 0 || tail != 0))
		}
		return errResult(tooLarge(real, ol.Size, t.readLimit()))
	case err != nil:
		return errResult(err)
	case jsonraw.EscapedLen(text, budget) > budget:
		return errResult(textTooLarge(tool, real, int64(len(text)), budget, head != 0 || tail != 0))
	}
	return textResult(text)
}

// readDirect is the fast path of a whole-file read: it opens the resolved
// path straight through the workspace, whose jail already keeps every access
// inside, and skips validate's link walk. Anything unusual ("~", a
// Windows-style path, a missing file, a link leading out, a directory, a
// read error, more than limit bytes) reports !ok, and the validated path
// then produces the official server's exact result.
func (t *fsTools) readDirect(ctx context.Context, p string, limit int64) (string, bool) {
	abs, ok := t.directPath(p)
	if !ok {
		return "", false
	}
	if r, ok := t.ws.(wholeReader); ok {
		b, err := r.Read(ctx, abs)
		if err != nil || int64(len(b)) > limit {
			return "", false
		}
		return decodeUTF8Owned(b), true
	}
	rc, err := t.ws.Open(ctx, abs)
	if err != nil {
		return "", false
	}
	defer rc.Close()
	size, ok := statSize(rc)
	if !ok {
		return "", false
	}
	b, err := readlimit.ReadAll(rc, size, limit)
	if err != nil {
		return "", false
	}
	return decodeUTF8Owned(b), true
}

// textTooLarge is the error of a text read whose result would not fit one
// MCP message: size is the bytes it read or would read (-1: more than the
// budget), part whether it was already a head or tail read.
func textTooLarge(tool, real string, size int64, budget int, part bool) error {
	what := real + " is larger than that"
	if size >= 0 {
		what = real + " is " + strconv.FormatInt(size, 10) + " bytes"
	}
	if part {
		what = "the lines asked for of " + real + " are larger than that"
		if size >= 0 {
			what = "the lines asked for of " + real + " take " + strconv.FormatInt(size, 10) + " bytes"
		}
	}
	return &toolError{msg: "File too large: " + tool + " returns at most " + strconv.Itoa(budget) +
		" bytes of text (JSON-escaped) in one result, the most one MCP message can carry, and " + what +
		". Read less: pass head or tail with a number of lines (not both)."}
}

// wholeReader is a workspace that reads a whole file in one call, within
// the limit it reports (agentbe's backends: Local does it in fewer system
// calls than Open, Stat, Read and Close). readDirect uses it only together
// with ReadLimiter, so the limit is the one the tools apply.
type wholeReader interface {
	ReadLimiter
	Read(ctx context.Context, p string) ([]byte, error)
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

// statSize is the size of r when r can say it is a regular file (an
// *os.File, or a reader with OpenInfo, which spares an fstat), else -1; ok
// is false when r says it is neither a regular file nor a directory (a
// FIFO, a device, a socket), which a read could block on or never finish.
func statSize(r io.Reader) (size int64, ok bool) {
	if oi, isOpen := r.(interface{ OpenInfo() fs.FileInfo }); isOpen {
		if fi := oi.OpenInfo(); fi != nil {
			return sizeOf(fi)
		}
	}
	if st, isFile := r.(interface{ Stat() (fs.FileInfo, error) }); isFile {
		if fi, err := st.Stat(); err == nil {
			return sizeOf(fi)
		}
	}
	return -1, true
}

// sizeOf is statSize's answer for what fstat said.
func sizeOf(fi fs.FileInfo) (size int64, ok bool) {
	switch m := fi.Mode(); {
	case m.IsRegular():
		return fi.Size(), true
	case !m.IsDir():
		return -1, false
	}
	return -1, true
}

// overLimit is the failure of a read over its limit (Size is the file's
// size when known, else -1).
type overLimit = readlimit.TooLarge

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

// open opens real for reading, with Node's wording on failure. Only
// regular files (and directories, which fail with EISDIR when read) are
// opened: a FIFO or a device could block the call or never end.
func (t *fsTools) open(ctx context.Context, real string) (io.ReadCloser, error) {
	rc, err := t.ws.Open(ctx, real)
	if err != nil {
		if isErrno(err, syscall.EISDIR) {
			return nil, eisdirRead(err)
		}
		// A socket fails to open (ENXIO); say what it is.
		if fi, serr := t.ws.Stat(ctx, real); serr == nil && !fi.Mode().IsRegular() && !fi.IsDir() {
			return nil, notRegular(real)
		}
		return nil, nodeErr(err, "open", real, "")
	}
	if _, ok := statSize(rc); !ok {
		rc.Close()
		return nil, notRegular(real)
	}
	return rc, nil
}

// notRegular is the error for a FIFO, a device or a socket.
func notRegular(real string) error {
	return &toolError{msg: "Not a regular file: " + real}
}

// readErr gives a read error Node's wording; an *overLimit is passed on
// as it is, for the caller to say which limit it was.
func (t *fsTools) readErr(real string, err error) error {
	var ol *overLimit
	if errors.As(err, &ol) {
		return err
	}
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

// readAll reads a whole file of at most limit bytes; a larger one fails
// with an error naming the read limit.
func (t *fsTools) readAll(ctx context.Context, real string, limit int64) ([]byte, error) {
	b, err := t.readAllRaw(ctx, real, limit)
	var ol *overLimit
	if errors.As(err, &ol) {
		return nil, tooLarge(real, ol.Size, t.readLimit())
	}
	return b, err
}

// readAllRaw is readAll failing with *overLimit on a file over limit.
func (t *fsTools) readAllRaw(ctx context.Context, real string, limit int64) ([]byte, error) {
	rc, err := t.open(ctx, real)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	size, _ := statSize(rc) // t.open refused the irregular
	b, err := readlimit.ReadAll(rc, size, limit)
	if err != nil {
		return nil, t.readErr(real, err)
	}
	return b, nil
}

func (t *fsTools) readFileText(ctx context.Context, real string) (string, error) {
	b, err := t.readAll(ctx, real, t.readLimit())
	if err != nil {
		return "", err
	}
	return decodeUTF8(b), nil
}

// headFile returns the first n lines (split on "\n" only), joined with "\n"
// and without a final newline, reading no further than needed. More than
// limit bytes of them fail with *overLimit.
func (t *fsTools) headFile(ctx context.Context, real string, n int, limit int64) (string, error) {
	// Even for n == 0 the file is opened, so a missing one is an error.
	rc, err := t.open(ctx, real)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	br := bufio.NewReaderSize(rc, 32<<10)
	var out []byte
	for lines, inLine := 0, false; lines < n; {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		frag, err := br.ReadSlice('\n')
		if len(frag) > 0 {
			frag = bytes.TrimSuffix(frag, []byte{'\n'})
			sep := 0
			if !inLine && lines > 0 {
				sep = 1
			}
			if int64(len(out)+sep+len(frag)) > limit {
				return "", &overLimit{Size: -1}
			}
			if need := len(out) + sep + len(frag); need > cap(out) {
				// Grow by doubling, but never past the limit.
				out = slices.Grow(out, int(min(int64(max(need, 2*cap(out))), limit))-len(out))
			}
			if sep == 1 {
				out = append(out, '\n')
			}
			out = append(out, frag...)
			inLine = err == bufio.ErrBufferFull
			if !inLine {
				lines++
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", t.readErr(real, err)
		}
	}
	return decodeUTF8(out), nil
}

// tailFile returns the last n lines of the file with CRLF turned into LF (a
// final newline counts as an empty last line), reading backwards from the
// end when the workspace's reader allows it. More than limit bytes of
// tail fail with *overLimit.
func (t *fsTools) tailFile(ctx context.Context, real string, n int, limit int64) (string, error) {
	fi, err := t.ws.Stat(ctx, real)
	if err != nil {
		return "", nodeErr(err, "stat", real, "")
	}
	if !fi.Mode().IsRegular() && !fi.IsDir() {
		return "", notRegular(real)
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
		data, err = tailBytes(ctx, ra, size, n, limit)
	} else {
		data, err = readlimit.ReadAll(rc, -1, limit)
		if err == nil {
			data = afterNthNewlineFromEnd(data, n)
		}
	}
	if err != nil {
		return "", t.readErr(real, err)
	}
	return normalizeLineEndings(decodeUTF8Owned(data)), nil
}

// tailBytes reads blocks from the end of ra until it has seen n newlines and
// returns the bytes after the n-th newline from the end (or all of them).
// Blocks are kept apart and joined once, so the work is linear in what is
// read; more than limit bytes of tail fails with *overLimit.
func tailBytes(ctx context.Context, ra io.ReaderAt, size int64, n int, limit int64) ([]byte, error) {
	var blocks [][]byte // the tail read so far, last block first
	total := int64(0)
	pos := size
	seen := 0
	join := func(first []byte) []byte {
		out := make([]byte, 0, int64(len(first))+total)
		out = append(out, first...)
		for i := len(blocks) - 1; i >= 0; i-- {
			out = append(out, blocks[i]...)
		}
		return out
	}
	for pos > 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		step := min(int64(tailBlock), pos)
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
					if total+int64(len(block)-i-1) > limit {
						return nil, &overLimit{Size: -1}
					}
					return join(block[i+1:]), nil
				}
			}
		}
		if total += step; total > limit {
			return nil, &overLimit{Size: -1}
		}
		blocks = append(blocks, block)
	}
	return join(nil), nil
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

func (t *fsTools) readMedia(ctx context.Context, a *args) (*mcp.CallToolResult, error) {
	_, real, err := t.pathArg(ctx, a)
	if err != nil {
		return errResult(err)
	}
	// The data goes out base64-encoded, twice (content and
	// structuredContent): a larger file would not fit one message.
	mediaMax := t.lim.media()
	limit := min(t.readLimit(), mediaMax)
	b, err := t.readAllRaw(ctx, real, limit)
	var ol *overLimit
	switch {
	case errors.As(err, &ol) && limit < t.readLimit():
		what := real + " is larger than that"
		if ol.Size >= 0 {
			what = real + " is " + strconv.FormatInt(ol.Size, 10) + " bytes"
		}
		return errResult(&toolError{msg: "File too large: read_media_file returns files of at most " +
			strconv.FormatInt(mediaMax, 10) + " bytes (base64 makes them a third larger, and one MCP message must carry them), and " +
			what + ". Copy or convert it with exec instead, or use a smaller file."})
	case errors.As(err, &ol):
		return errResult(tooLarge(real, ol.Size, t.readLimit()))
	case err != nil:
		return errResult(err)
	}
	data := base64.StdEncoding.EncodeToString(b)
	mime := mediaTypes[strings.ToLower(path.Ext(real))]
	if mime == "" {
		mime = "application/octet-stream"
	}
	var item mcp.Content
	switch {
	case strings.HasPrefix(mime, "image/"), strings.HasPrefix(mime, "audio/"):
		item = mcp.Content{Type: mime[:strings.IndexByte(mime, '/')], Data: data, MimeType: mime}
	default:
		item = mcp.Content{Type: "resource", Resource: &mcp.ResourceContents{URI: fileURL(real), MimeType: mime, Blob: data}}
	}
	return &mcp.CallToolResult{Content: []mcp.Content{item}, StructuredContent: mediaStructured{Content: []mcp.Content{item}}}, nil
}

// mediaStructured is read_media_file's structuredContent: {"content": [item]}.
type mediaStructured struct {
	Content []mcp.Content `json:"content"`
}

// fileURL is Node's url.pathToFileURL(p).href for an absolute, clean POSIX
// path (Node 20.20): every byte outside the unreserved ASCII that Node
// keeps is percent-encoded with upper-case hex. Bytes of a name that is not
// valid UTF-8 are encoded one by one (Node, which decodes names as UTF-8,
// would have replaced them with U+FFFD first).
func fileURL(p string) string {
	const hex = "0123456789ABCDEF"
	var sb strings.Builder
	sb.Grow(len(p) + len("file://") + 16)
	sb.WriteString("file://")
	for i := 0; i < len(p); i++ {
		c := p[i]
		if urlKeep[c] {
			sb.WriteByte(c)
			continue
		}
		sb.WriteByte('%')
		sb.WriteByte(hex[c>>4])
		sb.WriteByte(hex[c&15])
	}
	return sb.String()
}

// urlKeep marks the bytes pathToFileURL leaves as they are.
var urlKeep = func() (keep [256]bool) {
	for c := 0x21; c < 0x7F; c++ {
		keep[c] = strings.IndexByte("\"#%<>?[\\]^`{|}~", byte(c)) < 0
	}
	return keep
}()

// readMultiple reads the files in order; together they may hold at most
// the read limit, and their text together at most what one result can carry
// (escaped); a file that would take the total over either gets an error
// entry.
func (t *fsTools) readMultiple(ctx context.Context, a *args) (*mcp.CallToolResult, error) {
	paths := a.strs("paths", true, 1)
	if err := a.err(); err != nil {
		return errResult(err)
	}
	limit := t.readLimit()
	left := limit
	budget := t.lim.text()
	room := budget // of the escaped text
	parts := make([]string, len(paths))
	for i, p := range paths {
		if err := ctx.Err(); err != nil {
			return errResult(err)
		}
		real, text, err := t.readOne(ctx, p, min(left, int64(room)), left, limit)
		part := p + ":\n" + text + "\n"
		var ol *overLimit
		switch {
		case errors.As(err, &ol):
			err = multipleTooLarge(real, budget)
		case err == nil:
			// The part and the separator before the next one.
			if n := escapedLenExact(part) + escapedSepLen; n <= room {
				room -= n
				left -= int64(len(text))
			} else {
				err = multipleTooLarge(real, budget)
			}
		}
		if err != nil {
			part = p + ": Error - " + err.Error()
			room -= min(escapedLenExact(part)+escapedSepLen, room)
		}
		parts[i] = part
	}
	return textResult(strings.Join(parts, "\n---\n"))
}

// escapedSepLen is the escaped length of the separator between the files
// of read_multiple_files ("\n---\n").
const escapedSepLen = 7

// multipleTooLarge is the error entry of a file whose text does not fit
// what is left of read_multiple_files's result.
func multipleTooLarge(real string, budget int) error {
	return &toolError{msg: "File too large: " + real + " would take read_multiple_files over the " + strconv.Itoa(budget) +
		" bytes of text (JSON-escaped) one result can carry; read it alone with read_text_file, with head or tail for a large file"}
}

// readOne reads one file of read_multiple_files and returns its validated
// path and text: at most room bytes, failing with *overLimit when room <
// left; else at most left, the read limit still left for all files
// together, failing with an error that names the limit.
func (t *fsTools) readOne(ctx context.Context, p string, room, left, limit int64) (string, string, error) {
	real, err := t.validate(ctx, p)
	if err != nil {
		return "", "", err
	}
	b, err := t.readAllRaw(ctx, real, room)
	var ol *overLimit
	if errors.As(err, &ol) {
		switch {
		case room < left:
			return real, "", err
		case left < limit:
			return real, "", &toolError{msg: "File too large: " + real + " would take read_multiple_files over its read limit of " +
				strconv.FormatInt(limit, 10) + " bytes for all files together"}
		}
		return real, "", tooLarge(real, ol.Size, limit)
	}
	if err != nil {
		return real, "", err
	}
	return real, decodeUTF8(b), nil
}
