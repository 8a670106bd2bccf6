package acp

import (
	"archive/tar"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"mime"
	"net/http"
	"path"
	"sort"
	"strconv"

	agentbe "github.com/agentbe/agent-backend"
)

// maxReportedPaths bounds the "paths" list of an upload-batch response;
// "truncated" says when more were extracted.
const maxReportedPaths = 1024

// stagingDir holds upload-batch archives while they are extracted, under the
// backend root so that the final renames stay on one file system.
const stagingDir = ".agentbe/tmp"

type uploadEntry struct {
	name string // cleaned member name, relative to the destination
	dir  bool
}

// fsUpload answers POST /v1/fs/upload-batch?path=<dir> with an
// application/x-tar body. The archive is extracted into a staging
// directory first; only when every member is acceptable (regular files and
// directories with safe names, within MaxUploadEntries and MaxUploadBytes)
// and no member would replace a file with a directory or the reverse, the
// staged entries are moved into place. A bad archive therefore changes
// nothing. Symbolic links, hard links, devices and FIFOs are refused, and
// every write goes through the backend's jail.
func (h *Handler) fsUpload(w http.ResponseWriter, r *http.Request) {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/x-tar" {
		writeProblem(w, unsupportedMedia("content-type must be application/x-tar"))
		return
	}
	b, release, ok := h.backend(w, r)
	if !ok {
		return
	}
	defer release()
	dest := r.URL.Query().Get("path")
	if dest == "" {
		dest = "."
	}
	ctx := r.Context()
	if err := missingOrDir(ctx, b, dest); err != nil {
		writeProblem(w, err)
		return
	}
	stage, err := newStage(ctx, b)
	if err != nil {
		writeProblem(w, err)
		return
	}
	defer func() {
		_ = b.Remove(context.WithoutCancel(ctx), stage, agentbe.RemoveOptions{Recursive: true, Force: true})
	}()

	maxBytes := orDefault(h.cfg.MaxUploadBytes, DefaultMaxUploadBytes)
	entries, err := h.stageArchive(ctx, b, stage, http.MaxBytesReader(w, r.Body, maxBytes+maxBytes/8+1<<20), maxBytes)
	if err != nil {
		writeProblem(w, err)
		return
	}
	if err := checkUploadTargets(ctx, b, dest, entries); err != nil {
		writeProblem(w, err)
		return
	}
	if err := commitUpload(ctx, b, stage, dest, entries); err != nil {
		writeProblem(w, err)
		return
	}
	destReal, err := realPath(ctx, b, dest)
	if err != nil {
		writeProblem(w, err)
		return
	}
	paths := make([]string, 0, min(len(entries), maxReportedPaths))
	for _, e := range entries {
		if len(paths) == maxReportedPaths {
			break
		}
		paths = append(paths, path.Join(destReal, e.name))
	}
	writeJSON(w, http.StatusOK, map[string]any{"paths": paths, "truncated": len(entries) > len(paths)})
}

func newStage(ctx context.Context, b agentbe.Backend) (string, error) {
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	stage := stagingDir + "/upload-" + hex.EncodeToString(rnd[:])
	if err := b.Mkdir(ctx, stage); err != nil {
		return "", fsProblem(err, stagingDir)
	}
	return stage, nil
}

// stageArchive extracts the archive into stage and returns its entries in
// archive order (a repeated name once, at its first position).
func (h *Handler) stageArchive(ctx context.Context, b agentbe.Backend, stage string, body io.Reader, maxBytes int64) ([]uploadEntry, error) {
	maxEntries := orDefault(h.cfg.MaxUploadEntries, DefaultMaxUploadEntries)
	tr := tar.NewReader(body)
	var entries []uploadEntry
	seen := map[string]int{}
	var total int64
	for count := 0; ; count++ {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return nil, tooLarge("archive too large")
			}
			return nil, badRequest("invalid tar archive")
		}
		if count >= maxEntries {
			return nil, tooLarge("archive has more than " + strconv.Itoa(maxEntries) + " members")
		}
		name, err := CleanMemberName(hdr.Name)
		if err != nil {
			return nil, badRequest("unsafe archive member: " + strconv.Quote(hdr.Name))
		}
		var e uploadEntry
		switch hdr.Typeflag {
		case tar.TypeXGlobalHeader:
			continue
		case tar.TypeDir:
			if name == "" {
				continue
			}
			if err := b.Mkdir(ctx, path.Join(stage, name)); err != nil {
				return nil, badRequest("archive member " + strconv.Quote(hdr.Name) + " conflicts with another member")
			}
			e = uploadEntry{name: name, dir: true}
		case tar.TypeReg: // the reader turns old archives' '\x00' into TypeReg
			if name == "" {
				return nil, badRequest("unsafe archive member: " + strconv.Quote(hdr.Name))
			}
			total += hdr.Size
			if hdr.Size < 0 || total > maxBytes {
				return nil, tooLarge("archive content larger than " + strconv.FormatInt(maxBytes, 10) + " bytes")
			}
			if _, err := writeStream(ctx, b, path.Join(stage, name), tr); err != nil {
				if errors.Is(err, errInterrupted) {
					return nil, badRequest("truncated tar archive")
				}
				return nil, badRequest("archive member " + strconv.Quote(hdr.Name) + " conflicts with another member")
			}
			e = uploadEntry{name: name}
		default:
			return nil, badRequest("archive member " + strconv.Quote(hdr.Name) + " has an unsupported type (" +
				typeName(hdr.Typeflag) + "): only regular files and directories are accepted")
		}
		if i, dup := seen[name]; dup {
			if entries[i].dir != e.dir {
				return nil, badRequest("archive member " + strconv.Quote(hdr.Name) + " conflicts with another member")
			}
			continue
		}
		seen[name] = len(entries)
		entries = append(entries, e)
	}
	return entries, nil
}

func typeName(t byte) string {
	switch t {
	case tar.TypeSymlink:
		return "symbolic link"
	case tar.TypeLink:
		return "hard link"
	case tar.TypeChar, tar.TypeBlock:
		return "device"
	case tar.TypeFifo:
		return "FIFO"
	}
	return "type " + strconv.Quote(string(t))
}

// checkUploadTargets refuses, before anything is moved, an archive whose
// entries would replace a directory with a file or the reverse, or would
// need to go through an existing non-directory (or a link leaving the
// workspace: Stat fails with a path-escape error).
func checkUploadTargets(ctx context.Context, b agentbe.Backend, dest string, entries []uploadEntry) error {
	dirs := map[string]bool{}
	for _, e := range entries {
		for d := path.Dir(e.name); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
		if e.dir {
			dirs[e.name] = true
		}
	}
	names := make([]string, 0, len(dirs))
	for d := range dirs {
		names = append(names, d)
	}
	sort.Strings(names)
	for _, d := range append([]string{"."}, names...) {
		if err := missingOrDir(ctx, b, path.Join(dest, d)); errors.Is(err, errNotDir) {
			return conflict("archive directory " + strconv.Quote(d) + " would replace a file")
		} else if err != nil {
			return err
		}
	}
	for _, e := range entries {
		if e.dir {
			continue
		}
		fi, err := b.Lstat(ctx, path.Join(dest, e.name))
		if err == nil && fi.IsDir() {
			return conflict("archive file " + strconv.Quote(e.name) + " would replace a directory")
		}
	}
	return nil
}

// errNotDir is wrapped by missingOrDir's error for an existing
// non-directory.
var errNotDir = errors.New("not a directory")

// missingOrDir checks that p is a directory or does not exist (yet).
func missingOrDir(ctx context.Context, b agentbe.Backend, p string) error {
	fi, err := b.Stat(ctx, p)
	if err == nil && !fi.IsDir() {
		pe := badRequest("not a directory: " + p)
		pe.Err = errNotDir
		return pe
	}
	if err != nil {
		if pe := fsProblem(err, p); pe.Status != http.StatusNotFound {
			return pe
		}
	}
	return nil
}

// commitUpload moves the staged entries into dest.
func commitUpload(ctx context.Context, b agentbe.Backend, stage, dest string, entries []uploadEntry) error {
	made := map[string]bool{} // Mkdir once per directory, not once per file
	mkdir := func(d string) error {
		if made[d] {
			return nil
		}
		if err := b.Mkdir(ctx, d); err != nil {
			return fsProblem(err, d)
		}
		made[d] = true
		return nil
	}
	if err := mkdir(dest); err != nil {
		return err
	}
	for _, e := range entries {
		final := path.Join(dest, e.name)
		if e.dir {
			if err := mkdir(final); err != nil {
				return err
			}
			continue
		}
		if err := mkdir(path.Dir(final)); err != nil {
			return err
		}
		if err := b.Rename(ctx, path.Join(stage, e.name), final); err != nil {
			return fsProblem(err, final)
		}
	}
	return nil
}
