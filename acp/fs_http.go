package acp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	agentbe "github.com/agentbe/agent-backend"
)

// Paths in the file API follow the agentbe path conventions: relative to the
// backend root (the workspace, or the request's scope), absolute paths
// under the root as they are, and nothing can leave the root (every access
// goes through the backend's os.Root jail). Responses report paths as the
// absolute path inside the root (Backend.RealPath), as sandbox-agent
// reports absolute paths.

// fsEntry is sandbox-agent's FsEntry / FsStat object.
type fsEntry struct {
	Name      string `json:"name,omitempty"`
	Path      string `json:"path"`
	EntryType string `json:"entryType"` // "file" or "directory"
	Size      int64  `json:"size"`
	Modified  string `json:"modified,omitempty"`
}

// modifiedLayout is the RFC 3339 form sandbox-agent uses (nanoseconds,
// numeric UTC offset).
const modifiedLayout = "2006-01-02T15:04:05.000000000-07:00"

func entryOf(name, p string, fi fs.FileInfo) fsEntry {
	e := fsEntry{Name: name, Path: p, EntryType: "file", Size: fi.Size()}
	if fi.IsDir() {
		e.EntryType = "directory"
	}
	if !fi.ModTime().IsZero() {
		e.Modified = fi.ModTime().UTC().Format(modifiedLayout)
	}
	return e
}

// queryPath returns the required ?path= parameter.
func queryPath(w http.ResponseWriter, r *http.Request) (string, bool) {
	p := r.URL.Query().Get("path")
	if p == "" {
		writeProblem(w, badRequest("missing required 'path' query parameter"))
		return "", false
	}
	return p, true
}

// withPath adapts a handler of ?path= (required) on the request's backend:
// it checks the parameter, then resolves the backend, answering a failure
// of either itself, and releases the backend when fn returns.
func (h *Handler) withPath(fn func(w http.ResponseWriter, r *http.Request, b agentbe.Backend, p string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, ok := queryPath(w, r)
		if !ok {
			return
		}
		b, release, ok := h.backend(w, r)
		if !ok {
			return
		}
		defer release()
		fn(w, r, b, p)
	}
}

// realPath is the absolute in-root path reported for p.
func realPath(ctx context.Context, b agentbe.Backend, p string) (string, error) {
	rp, err := b.RealPath(ctx, p)
	if err != nil {
		return "", fsProblem(err, p)
	}
	return rp, nil
}

// fsEntries answers GET /v1/fs/entries?path= (default: the root).
func (h *Handler) fsEntries(w http.ResponseWriter, r *http.Request) {
	b, release, ok := h.backend(w, r)
	if !ok {
		return
	}
	defer release()
	ctx := r.Context()
	p := r.URL.Query().Get("path")
	if p == "" {
		p = "."
	}
	fi, err := b.Stat(ctx, p)
	if err != nil {
		writeProblem(w, fsProblem(err, p))
		return
	}
	if !fi.IsDir() {
		writeProblem(w, badRequest("not a directory: "+p))
		return
	}
	dir, err := realPath(ctx, b, p)
	if err != nil {
		writeProblem(w, err)
		return
	}
	names, err := b.ReadDir(ctx, p)
	if err != nil {
		writeProblem(w, fsProblem(err, p))
		return
	}
	out := make([]fsEntry, 0, len(names))
	for _, name := range names {
		child := path.Join(p, name)
		fi, err := b.Stat(ctx, child)
		if err != nil { // a dangling or escaping link: describe the link itself
			if fi, err = b.Lstat(ctx, child); err != nil {
				continue // removed meanwhile
			}
		}
		out = append(out, entryOf(name, path.Join(dir, name), fi))
	}
	writeJSON(w, http.StatusOK, out)
}

// fsStat answers GET /v1/fs/stat?path=.
func (h *Handler) fsStat(w http.ResponseWriter, r *http.Request, b agentbe.Backend, p string) {
	fi, err := b.Stat(r.Context(), p)
	if err != nil {
		writeProblem(w, fsProblem(err, p))
		return
	}
	rp, err := realPath(r.Context(), b, p)
	if err != nil {
		writeProblem(w, err)
		return
	}
	writeJSON(w, http.StatusOK, entryOf("", rp, fi))
}

// fsRead answers GET /v1/fs/file?path=: the file streamed from the jail,
// with Range and conditional requests when the backend's reader can seek.
func (h *Handler) fsRead(w http.ResponseWriter, r *http.Request, b agentbe.Backend, p string) {
	f, err := b.Open(r.Context(), p)
	if err != nil {
		writeProblem(w, fsProblem(err, p))
		return
	}
	defer f.Close()
	var fi fs.FileInfo
	if st, ok := f.(interface{ Stat() (fs.FileInfo, error) }); ok {
		fi, err = st.Stat()
	} else {
		fi, err = b.Stat(r.Context(), p)
	}
	if err != nil {
		writeProblem(w, fsProblem(err, p))
		return
	}
	if fi.IsDir() {
		writeProblem(w, badRequest("is a directory: "+p))
		return
	}
	if !fi.Mode().IsRegular() {
		writeProblem(w, badRequest("not a regular file: "+p))
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	if rs, ok := f.(io.ReadSeeker); ok {
		if plainGet(r) {
			sendWhole(w, f, fi)
			return
		}
		http.ServeContent(w, r, "", fi.ModTime(), readSeekerOnly{rs})
		return
	}
	w.Header().Set("Content-Length", strconv.FormatInt(fi.Size(), 10))
	w.WriteHeader(http.StatusOK)
	_, _ = io.Copy(w, f)
}

// plainGet reports a GET without Range or conditional headers: the whole
// file, always 200.
func plainGet(r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	for _, h := range []string{"Range", "If-Range", "If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since"} {
		if r.Header.Get(h) != "" {
			return false
		}
	}
	return true
}

// sendChunk is how much of a file goes out per copy in sendWhole.
const sendChunk = 8 << 20

// sendWhole answers a plain GET with the whole file, with the headers
// http.ServeContent gives a 200. It copies sendChunk bytes at a time, so
// that a reader that gives its descriptor (agentbe's Local) goes out with
// sendfile (64 MiB measured at 2.2-3.4 GB/s, against 1.6-2.1 GB/s through
// net/http's 32 KiB copy), while a Destroy of the backend still stops the
// stream within one chunk.
func sendWhole(w http.ResponseWriter, f io.Reader, fi fs.FileInfo) {
	if !fi.ModTime().IsZero() && !fi.ModTime().Equal(time.Unix(0, 0)) {
		w.Header().Set("Last-Modified", fi.ModTime().UTC().Format(http.TimeFormat))
	}
	w.Header().Set("Accept-Ranges", "bytes")
	size := fi.Size()
	w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
	w.WriteHeader(http.StatusOK)
	for sent := int64(0); sent < size; {
		n, err := io.CopyN(w, f, min(sendChunk, size-sent))
		sent += n
		if err != nil {
			return
		}
	}
}

// readSeekerOnly hides everything of a reader but Read and Seek, so that
// http.ServeContent (whose copy of a range is one call) never reaches
// sendfile, which would not stop at a Destroy.
type readSeekerOnly struct{ io.ReadSeeker }

func (h *Handler) maxFileBytes() int64 {
	switch {
	case h.cfg.MaxFileBytes < 0:
		return -1
	case h.cfg.MaxFileBytes == 0:
		return DefaultMaxFileBytes
	}
	return h.cfg.MaxFileBytes
}

// fsWrite answers PUT /v1/fs/file?path=: the body streamed into a temporary
// file that replaces the target atomically only when it was received
// whole; a failed or cut upload leaves the old content.
func (h *Handler) fsWrite(w http.ResponseWriter, r *http.Request, b agentbe.Backend, p string) {
	body := r.Body
	if max := h.maxFileBytes(); max >= 0 {
		if r.ContentLength > max {
			writeProblem(w, fileTooLarge(max))
			return
		}
		body = http.MaxBytesReader(w, r.Body, max)
	}
	n, err := writeStream(r.Context(), b, p, body)
	if err != nil {
		writeProblem(w, err)
		return
	}
	rp, err := realPath(r.Context(), b, p)
	if err != nil {
		writeProblem(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"path": rp, "bytesWritten": n})
}

// errInterrupted is wrapped by writeStream's error when reading src failed.
var errInterrupted = errors.New("upload interrupted")

func fileTooLarge(max int64) *problemError {
	return tooLarge("file larger than " + strconv.FormatInt(max, 10) + " bytes")
}

// writeStream copies src into p atomically (Backend.Create); on any error
// the writer is abandoned, so p keeps its previous content.
func writeStream(ctx context.Context, b agentbe.Backend, p string, src io.Reader) (int64, error) {
	if fi, err := b.Stat(ctx, p); err == nil && fi.IsDir() {
		return 0, badRequest("is a directory: " + p)
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f, err := b.Create(cctx, p)
	if err != nil {
		return 0, fsProblem(err, p)
	}
	n, err := io.Copy(f, src)
	if err != nil {
		cancel() // abandon: the temporary file is discarded
		_ = f.Close()
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return n, fileTooLarge(mbe.Limit)
		}
		pe := badRequest("upload interrupted: nothing written to " + p)
		pe.Err = errInterrupted
		return n, pe
	}
	if err := f.Close(); err != nil {
		return n, fsProblem(err, p)
	}
	return n, nil
}

// fsDelete answers DELETE /v1/fs/entry?path=[&recursive=true]. The root
// itself is refused; a symbolic link is removed, never followed.
func (h *Handler) fsDelete(w http.ResponseWriter, r *http.Request, b agentbe.Backend, p string) {
	ctx := r.Context()
	fi, err := b.Lstat(ctx, p)
	if err != nil {
		writeProblem(w, fsProblem(err, p))
		return
	}
	if namesDirectory(p) && !fi.IsDir() {
		// Paths are cleaned lexically, so "link/." would name the link
		// itself and delete it; POSIX resolves it through the link, to
		// the directory it points to. Neither is what was meant: refused.
		writeProblem(w, badRequest("path "+p+" ends with a slash, so it names a directory, "+
			"but it is a symbolic link or a file: name it without the trailing slash to delete it"))
		return
	}
	var rp string
	if fi.Mode()&fs.ModeSymlink != 0 {
		// The link itself goes: report its own path, not its target's.
		rp = p
		if dir, err := realPath(ctx, b, path.Dir(p)); err == nil {
			rp = path.Join(dir, path.Base(p))
		}
	} else {
		if rp, err = realPath(ctx, b, p); err != nil {
			writeProblem(w, err)
			return
		}
		root, err := realPath(ctx, b, ".")
		if err != nil {
			writeProblem(w, err)
			return
		}
		if rp == root {
			writeProblem(w, problem(http.StatusForbidden, "forbidden", "Forbidden",
				"refusing to delete the workspace root"))
			return
		}
	}
	recursive, _ := strconv.ParseBool(r.URL.Query().Get("recursive"))
	if err := b.Remove(ctx, p, agentbe.RemoveOptions{Recursive: recursive}); err != nil {
		writeProblem(w, fsProblem(err, p))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"path": rp})
}

// fsMkdir answers POST /v1/fs/mkdir?path= (parents created).
func (h *Handler) fsMkdir(w http.ResponseWriter, r *http.Request, b agentbe.Backend, p string) {
	if err := b.Mkdir(r.Context(), p); err != nil {
		writeProblem(w, fsProblem(err, p))
		return
	}
	rp, err := realPath(r.Context(), b, p)
	if err != nil {
		writeProblem(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"path": rp})
}

type moveRequest struct {
	From      string `json:"from"`
	To        string `json:"to"`
	Overwrite *bool  `json:"overwrite"`
}

// fsMove answers POST /v1/fs/move {"from","to","overwrite"}. A missing
// source is 404 whatever overwrite says; from and to naming the same file
// (or a link to it) is a successful no-op, never a rename that would lose
// it; an existing target without overwrite is 409.
func (h *Handler) fsMove(w http.ResponseWriter, r *http.Request) {
	var req moveRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&req); err != nil {
		writeProblem(w, badRequest("invalid JSON body: "+err.Error()))
		return
	}
	if req.From == "" || req.To == "" {
		writeProblem(w, badRequest("'from' and 'to' are required"))
		return
	}
	b, release, ok := h.backend(w, r)
	if !ok {
		return
	}
	defer release()
	ctx := r.Context()
	if _, err := b.Lstat(ctx, req.From); err != nil {
		writeProblem(w, fsProblem(err, req.From))
		return
	}
	from, err := realPath(ctx, b, req.From)
	if err != nil {
		writeProblem(w, err)
		return
	}
	to, err := realPath(ctx, b, req.To)
	if err != nil {
		writeProblem(w, err)
		return
	}
	if from == to || sameFile(ctx, b, req.From, req.To) {
		writeJSON(w, http.StatusOK, map[string]string{"from": from, "to": to})
		return
	}
	if _, err := b.Lstat(ctx, req.To); err == nil && (req.Overwrite == nil || !*req.Overwrite) {
		writeProblem(w, conflict("destination already exists: "+req.To))
		return
	}
	if err := b.Rename(ctx, req.From, req.To); err != nil {
		writeProblem(w, fsProblem(err, req.From))
		return
	}
	if rp, err := realPath(ctx, b, req.To); err == nil {
		to = rp
	}
	writeJSON(w, http.StatusOK, map[string]string{"from": from, "to": to})
}

// sameFile reports whether a and b are the same file (hard links included).
func sameFile(ctx context.Context, be agentbe.Backend, a, b string) bool {
	fa, err := be.Stat(ctx, a)
	if err != nil {
		return false
	}
	fb, err := be.Stat(ctx, b)
	return err == nil && os.SameFile(fa, fb)
}

// namesDirectory reports whether p ends in "/" or "/." (any mix of them),
// the spellings by which a path names a directory rather than the entry
// itself; the root's own spellings ("/", "./") end so too.
func namesDirectory(p string) bool {
	return strings.HasSuffix(p, "/") || strings.HasSuffix(p, "/.")
}
