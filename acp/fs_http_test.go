package acp

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

func q(p string) string { return url.QueryEscape(p) }

func TestFSRoutes(t *testing.T) {
	e := newTestEnv(t, envOpts{})
	// PUT then GET, stat, entries.
	r := e.do("PUT", "/v1/fs/file?path=sub/a.txt", "application/octet-stream", []byte("hello"))
	if r.status != 200 || r.json(t)["bytesWritten"] != 5.0 || r.json(t)["path"] != e.root+"/sub/a.txt" {
		t.Fatalf("PUT: %d %s", r.status, r.body)
	}
	if r := e.do("GET", "/v1/fs/file?path=sub/a.txt", "", nil); r.status != 200 || string(r.body) != "hello" ||
		r.header.Get("Content-Type") != "application/octet-stream" {
		t.Fatalf("GET: %d %q", r.status, r.body)
	}
	if r := e.do("GET", "/v1/fs/file?path=sub/a.txt", "", nil, "Range", "bytes=1-3"); r.status != 206 || string(r.body) != "ell" {
		t.Fatalf("Range: %d %q", r.status, r.body)
	}
	st := e.do("GET", "/v1/fs/stat?path=sub/a.txt", "", nil).json(t)
	if st["entryType"] != "file" || st["size"] != 5.0 || st["path"] != e.root+"/sub/a.txt" || !strings.HasSuffix(st["modified"].(string), "+00:00") {
		t.Fatalf("stat %v", st)
	}
	r = e.do("GET", "/v1/fs/entries?path=sub", "", nil)
	if r.status != 200 || !strings.HasPrefix(string(r.body), `[{"name":"a.txt","path":"`+e.root+`/sub/a.txt","entryType":"file","size":5,"modified":"`) {
		t.Fatalf("entries: %d %s", r.status, r.body)
	}
	if r := e.do("GET", "/v1/fs/entries", "", nil); r.status != 200 || !strings.Contains(string(r.body), `"name":"sub","path":"`+e.root+`/sub","entryType":"directory"`) {
		t.Fatalf("root entries: %s", r.body)
	}
	// mkdir, move, delete.
	if r := e.do("POST", "/v1/fs/mkdir?path=d1/d2", "", nil); r.status != 200 || r.json(t)["path"] != e.root+"/d1/d2" {
		t.Fatalf("mkdir: %d %s", r.status, r.body)
	}
	mv := func(body string) response { return e.do("POST", "/v1/fs/move", "application/json", []byte(body)) }
	if r := mv(`{"from":"sub/a.txt","to":"sub/b.txt"}`); r.status != 200 || r.json(t)["to"] != e.root+"/sub/b.txt" {
		t.Fatalf("move: %d %s", r.status, r.body)
	}
	e.do("PUT", "/v1/fs/file?path=sub/c.txt", "", []byte("C"))
	if r := mv(`{"from":"sub/b.txt","to":"sub/c.txt"}`); r.status != 409 {
		t.Fatalf("move onto existing without overwrite: %d %s", r.status, r.body)
	}
	if r := mv(`{"from":"sub/b.txt","to":"sub/b.txt","overwrite":true}`); r.status != 200 || readFile(t, e, "sub/b.txt") != "hello" {
		t.Fatalf("move onto itself lost data: %d %s", r.status, r.body)
	}
	if err := os.Link(e.root+"/sub/b.txt", e.root+"/sub/hard.txt"); err != nil {
		t.Fatal(err)
	}
	if r := mv(`{"from":"sub/b.txt","to":"sub/hard.txt","overwrite":true}`); r.status != 200 || readFile(t, e, "sub/b.txt") != "hello" {
		t.Fatalf("move onto a hard link of itself: %d %s", r.status, r.body)
	}
	if err := os.Symlink("b.txt", e.root+"/sub/lnk"); err != nil {
		t.Fatal(err)
	}
	if r := mv(`{"from":"sub/lnk","to":"sub/b.txt","overwrite":true}`); r.status != 200 || readFile(t, e, "sub/b.txt") != "hello" {
		t.Fatalf("move of a link onto its target lost data: %d %s", r.status, r.body)
	}
	if r := mv(`{"from":"sub/missing","to":"sub/c.txt","overwrite":true}`); r.status != 404 || readFile(t, e, "sub/c.txt") != "C" {
		t.Fatalf("missing source with overwrite: %d %s", r.status, r.body)
	}
	if r := mv(`{"from":"sub/b.txt","to":"sub/c.txt","overwrite":true}`); r.status != 200 || readFile(t, e, "sub/c.txt") != "hello" {
		t.Fatalf("overwrite: %d %s", r.status, r.body)
	}
	if r := e.do("DELETE", "/v1/fs/entry?path=d1", "", nil); r.status != 409 {
		t.Fatalf("delete non-empty dir: %d %s", r.status, r.body)
	}
	if r := e.do("DELETE", "/v1/fs/entry?path=d1&recursive=true", "", nil); r.status != 200 || r.json(t)["path"] != e.root+"/d1" {
		t.Fatalf("delete recursive: %d %s", r.status, r.body)
	}
	if r := e.do("DELETE", "/v1/fs/entry?path=d1", "", nil); r.status != 404 {
		t.Fatalf("delete missing: %d %s", r.status, r.body)
	}
	// The root is never deleted, whatever it is called.
	if err := os.Symlink(".", e.root+"/self"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{".", "/", "./", "sub/..", e.root, e.root + "/"} {
		if r := e.do("DELETE", "/v1/fs/entry?recursive=true&path="+q(p), "", nil); r.status != 403 {
			t.Fatalf("delete root as %q: %d %s", p, r.status, r.body)
		}
	}
	if r := e.do("DELETE", "/v1/fs/entry?recursive=true&path=self", "", nil); r.status != 200 || readFile(t, e, "sub/c.txt") != "hello" {
		t.Fatalf("deleting a link to the root must remove only the link: %d %s", r.status, r.body)
	}
	// Bad input.
	for _, tc := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/v1/fs/file", 400}, {"GET", "/v1/fs/file?path=sub", 400}, {"GET", "/v1/fs/file?path=nope", 404},
		{"GET", "/v1/fs/stat?path=nope", 404}, {"GET", "/v1/fs/entries?path=sub/c.txt", 400},
		{"PUT", "/v1/fs/file?path=sub", 400}, {"POST", "/v1/fs/mkdir?path=sub/c.txt", 409},
		{"POST", "/v1/fs/move", 400}, {"DELETE", "/v1/fs/entry", 400}, {"GET", "/v1/nope", 404},
	} {
		if r := e.do(tc.method, tc.path, "", nil); r.status != tc.status || (r.status >= 400 && r.header.Get("Content-Type") != "application/problem+json") {
			t.Errorf("%s %s: %d %s", tc.method, tc.path, r.status, r.body)
		}
	}
	if r := e.do("GET", "/", "", nil); r.status != 200 || r.json(t)["name"] == nil {
		t.Fatalf("GET /: %d %s", r.status, r.body)
	}
	if r := e.do("GET", "/v1/health", "", nil); string(r.body) != "{\"status\":\"ok\"}\n" {
		t.Fatalf("health: %s", r.body)
	}
}

func readFile(t *testing.T, e *testEnv, p string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.root, p))
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

// TestFSWriteLimitKeepsOldContent: a body over MaxFileBytes is refused with
// 413 and the previous content stays.
// TestFSDeleteTrailingSlash: a path ending in "/" or "/." names a
// directory (POSIX resolves it through a final link, to the directory the
// link points to), so on a link or a file it is refused with 400 and
// nothing is deleted; it was lexically cleaned to the link, which went.
func TestFSDeleteTrailingSlash(t *testing.T) {
	e := newTestEnv(t, envOpts{})
	if err := os.MkdirAll(e.root+"/target", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.root+"/target/keep.txt", []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.root+"/file.txt", []byte("f"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("target", e.root+"/link"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"link/", "link/.", "link/./", "link//", "/link/.", "file.txt/", "file.txt/."} {
		for _, rec := range []string{"", "&recursive=true"} {
			r := e.do("DELETE", "/v1/fs/entry?path="+q(p)+rec, "", nil)
			if r.status != 400 || !strings.Contains(string(r.body), "names a directory") {
				t.Errorf("DELETE %q%s: %d %s", p, rec, r.status, r.body)
			}
		}
	}
	if fi, err := os.Lstat(e.root + "/link"); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("the link went: %v", err)
	}
	if readFile(t, e, "target/keep.txt") != "keep" || readFile(t, e, "file.txt") != "f" {
		t.Fatal("a file went")
	}
	// A directory with a trailing slash, and the link without one, go.
	if err := os.MkdirAll(e.root+"/d", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"d/.", "link"} {
		if r := e.do("DELETE", "/v1/fs/entry?path="+q(p), "", nil); r.status != 200 {
			t.Fatalf("DELETE %q: %d %s", p, r.status, r.body)
		}
	}
	if readFile(t, e, "target/keep.txt") != "keep" {
		t.Fatal("deleting the link touched its target")
	}
}

func TestFSWriteLimitKeepsOldContent(t *testing.T) {
	e := newTestEnv(t, envOpts{cfg: Config{MaxFileBytes: 1 << 20}})
	e.do("PUT", "/v1/fs/file?path=f", "", []byte("old"))
	if r := e.do("PUT", "/v1/fs/file?path=f", "", bytes.Repeat([]byte("x"), 1<<20+1)); r.status != 413 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if got := readFile(t, e, "f"); got != "old" {
		t.Fatalf("content %q", got)
	}
	if r := e.do("PUT", "/v1/fs/file?path=f", "", bytes.Repeat([]byte("y"), 1<<20)); r.status != 200 {
		t.Fatalf("at the limit: %d %s", r.status, r.body)
	}
}

type tarMember struct {
	name     string
	typ      byte
	body     string
	linkname string
}

func makeTar(t *testing.T, members ...tarMember) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, m := range members {
		h := &tar.Header{Name: m.name, Typeflag: m.typ, Mode: 0o644, Size: int64(len(m.body)), Linkname: m.linkname, Format: tar.FormatPAX}
		if m.typ != tar.TypeReg {
			h.Size = 0
		}
		if m.typ == tar.TypeDir {
			h.Mode = 0o755
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			tw.Write([]byte(m.body))
		}
	}
	tw.Close()
	return b.Bytes()
}

func TestUploadBatch(t *testing.T) {
	e := newTestEnv(t, envOpts{cfg: Config{MaxUploadEntries: 5, MaxUploadBytes: 1 << 10}})
	ok := makeTar(t, tarMember{name: "t/", typ: tar.TypeDir}, tarMember{name: "t/a.txt", typ: tar.TypeReg, body: "A"},
		tarMember{name: "./b.txt", typ: tar.TypeReg, body: "B"})
	r := e.do("POST", "/v1/fs/upload-batch?path=up", "application/x-tar", ok)
	want := `{"paths":["` + e.root + `/up/t","` + e.root + `/up/t/a.txt","` + e.root + `/up/b.txt"],"truncated":false}` + "\n"
	if r.status != 200 || string(r.body) != want {
		t.Fatalf("upload: %d %s", r.status, r.body)
	}
	if readFile(t, e, "up/t/a.txt") != "A" || readFile(t, e, "up/b.txt") != "B" {
		t.Fatal("content not extracted")
	}
	if r := e.do("POST", "/v1/fs/upload-batch", "application/octet-stream", ok); r.status != 415 {
		t.Fatalf("content type: %d", r.status)
	}
	tests := []struct {
		name    string
		members []tarMember
		status  int
	}{
		{"too many members", []tarMember{{name: "1", typ: tar.TypeReg}, {name: "2", typ: tar.TypeReg}, {name: "3", typ: tar.TypeReg},
			{name: "4", typ: tar.TypeReg}, {name: "5", typ: tar.TypeReg}, {name: "6", typ: tar.TypeReg}}, 413},
		{"too large", []tarMember{{name: "big", typ: tar.TypeReg, body: strings.Repeat("x", 2<<10)}}, 413},
		{"file and dir with one name", []tarMember{{name: "x", typ: tar.TypeReg, body: "1"}, {name: "x/", typ: tar.TypeDir}}, 400},
		{"dir over existing file", []tarMember{{name: "up/b.txt/", typ: tar.TypeDir}}, 409},
		{"file over existing dir", []tarMember{{name: "up/t", typ: tar.TypeReg, body: "1"}}, 409},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			members := append([]tarMember{{name: "partial.txt", typ: tar.TypeReg, body: "P"}}, tc.members...)
			r := e.do("POST", "/v1/fs/upload-batch", "application/x-tar", makeTar(t, members...))
			if r.status != tc.status {
				t.Fatalf("%d %s", r.status, r.body)
			}
			if _, err := os.Stat(e.root + "/partial.txt"); err == nil {
				t.Fatal("a rejected archive left a member behind")
			}
		})
	}
	if r := e.do("POST", "/v1/fs/upload-batch", "application/x-tar", ok[:700]); r.status != 400 {
		t.Fatalf("truncated archive: %d %s", r.status, r.body)
	}
	// Cut inside a member's content (600 bytes padded to 1024, then the
	// 1024-byte end marker): named as truncated, nothing extracted.
	cut := makeTar(t, tarMember{name: "cut.txt", typ: tar.TypeReg, body: strings.Repeat("c", 600)})
	cut = cut[:len(cut)-2048+300]
	if r := e.do("POST", "/v1/fs/upload-batch", "application/x-tar", cut); r.status != 400 ||
		!strings.Contains(string(r.body), "truncated tar archive") {
		t.Fatalf("archive cut inside a member: %d %s", r.status, r.body)
	}
	if _, err := os.Stat(e.root + "/cut.txt"); err == nil {
		t.Fatal("a truncated member was extracted")
	}
	if err := os.WriteFile(e.root+"/plain.txt", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := e.do("POST", "/v1/fs/upload-batch?path=plain.txt", "application/x-tar", ok); r.status != 400 ||
		!strings.Contains(string(r.body), "not a directory") {
		t.Fatalf("upload onto a file: %d %s", r.status, r.body)
	}
	if ents, _ := os.ReadDir(e.root + "/.agentbe/tmp"); len(ents) != 0 {
		t.Fatalf("staging left behind: %v", ents)
	}
}

// treeHash fingerprints everything under dir (names, types, content, link
// targets) so that any change is seen.
func treeHash(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			lines = append(lines, p+" ERR")
			return nil
		}
		info, _ := d.Info()
		line := p + " " + info.Mode().String()
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			line += " -> " + l
		case d.Type().IsRegular():
			b, _ := os.ReadFile(p)
			s := sha256.Sum256(b)
			line += " " + hex.EncodeToString(s[:])
		}
		lines = append(lines, line)
		return nil
	})
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// TestEscapeCorpus aims every fs route, upload-batch and the config routes
// at a canary directory next to the workspace, through "..", absolute
// paths, symlinks in the workspace (to the canary dir and to a canary file)
// and archive members. Nothing outside the workspace may be read, changed
// or named in a response.
func TestEscapeCorpus(t *testing.T) {
	e := newTestEnv(t, envOpts{})
	canary := filepath.Join(filepath.Dir(e.root), "canary")
	os.MkdirAll(canary+"/dir", 0o755)
	os.WriteFile(canary+"/secret.txt", []byte("CANARY-SECRET"), 0o644)
	os.WriteFile(canary+"/dir/inner.txt", []byte("CANARY-INNER"), 0o644)
	for link, target := range map[string]string{"out": canary, "outfile": canary + "/secret.txt", "outrel": "../canary",
		"sub/deep": "../../canary/dir"} {
		os.MkdirAll(filepath.Dir(filepath.Join(e.root, link)), 0o755)
		if err := os.Symlink(target, filepath.Join(e.root, link)); err != nil {
			t.Fatal(err)
		}
	}
	before := treeHash(t, canary)
	paths := []string{"../canary/secret.txt", "../canary", "../canary/dir", canary + "/secret.txt", "out/secret.txt", "out",
		"outfile", "outrel/secret.txt", "sub/deep/inner.txt", "sub/deep", "out/dir/inner.txt", "out/new.txt", "outrel/new",
		"sub/../../canary/secret.txt", "./../canary/secret.txt", "sub/deep/new.txt"}
	mv := func(from, to string) string {
		return `{"from":"` + from + `","to":"` + to + `","overwrite":true}`
	}
	type attack struct {
		method, url, ctype string
		body               []byte
	}
	var attacks []attack
	for _, p := range paths {
		attacks = append(attacks,
			attack{"GET", "/v1/fs/file?path=" + q(p), "", nil},
			attack{"GET", "/v1/fs/stat?path=" + q(p), "", nil},
			attack{"GET", "/v1/fs/entries?path=" + q(p), "", nil},
			attack{"PUT", "/v1/fs/file?path=" + q(p), "application/octet-stream", []byte("PWNED")},
			attack{"POST", "/v1/fs/mkdir?path=" + q(p+"/x"), "", nil},
			attack{"DELETE", "/v1/fs/entry?recursive=true&path=" + q(p+"/x"), "", nil},
			attack{"POST", "/v1/fs/move", "application/json", []byte(mv(p, "stolen"))},
			attack{"PUT", "/v1/config/mcp?mcpName=x&directory=" + q(p), "application/json", []byte(`{"type":"local","command":"x"}`)},
			attack{"DELETE", "/v1/config/skills?skillName=x&directory=" + q(p), "", nil},
			attack{"POST", "/v1/fs/upload-batch?path=" + q(p), "application/x-tar", makeTar(t, tarMember{name: "x.txt", typ: tar.TypeReg, body: "PWNED"})},
		)
		e.do("PUT", "/v1/fs/file?path=mine.txt", "", []byte("mine"))
		attacks = append(attacks, attack{"POST", "/v1/fs/move", "application/json", []byte(mv("mine.txt", p))})
	}
	for _, members := range [][]tarMember{
		{{name: "../canary/x.txt", typ: tar.TypeReg, body: "PWNED"}},
		{{name: canary + "/x.txt", typ: tar.TypeReg, body: "PWNED"}},
		{{name: "a/../../canary/x.txt", typ: tar.TypeReg, body: "PWNED"}},
		{{name: "out/x.txt", typ: tar.TypeReg, body: "PWNED"}},
		{{name: "sub/deep/x.txt", typ: tar.TypeReg, body: "PWNED"}},
		{{name: "outfile", typ: tar.TypeReg, body: "PWNED"}},
		{{name: "lnk", typ: tar.TypeSymlink, linkname: canary}, {name: "lnk/x.txt", typ: tar.TypeReg, body: "PWNED"}},
		{{name: "hl", typ: tar.TypeLink, linkname: canary + "/secret.txt"}},
		{{name: "hl2", typ: tar.TypeLink, linkname: "../canary/secret.txt"}},
		{{name: "dev", typ: tar.TypeChar}},
		{{name: "blk", typ: tar.TypeBlock}},
		{{name: "fifo", typ: tar.TypeFifo}},
	} {
		attacks = append(attacks, attack{"POST", "/v1/fs/upload-batch", "application/x-tar", makeTar(t, members...)})
	}
	// The canary's content must never appear; its host path only when the
	// request itself named it (an echo of the client's own input).
	leaks := []string{"CANARY", canary}
	for _, a := range attacks {
		r := e.do(a.method, a.url, a.ctype, a.body)
		for _, l := range leaks {
			asked := strings.Contains(a.url+string(a.body), l) || strings.Contains(a.url, q(l))
			if bytes.Contains(r.body, []byte(l)) && (l == "CANARY" || !asked) {
				t.Errorf("%s %s %s: response leaks %q: %s", a.method, a.url, a.body, l, r.body)
			}
		}
		if after := treeHash(t, canary); after != before {
			t.Fatalf("%s %s %s (%d %s) changed the canary:\n%s", a.method, a.url, a.body, r.status, r.body, after)
		}
	}
	// The outfile member, if accepted, replaced the link inside the
	// workspace, never the canary file (checked above).
	t.Logf("%d attacks, 0 escapes", len(attacks))
}

func TestConfigRoutes(t *testing.T) {
	e := newTestEnv(t, envOpts{})
	base := "/v1/config/mcp?directory=proj&mcpName="
	if r := e.do("GET", base+"fs", "", nil); r.status != 404 || r.json(t)["sessionId"] != "mcp:fs" {
		t.Fatalf("missing: %d %s", r.status, r.body)
	}
	entry := `{"type":"local","command":"node","args":["x.js"],"env":{"A":"1"}}`
	if r := e.do("PUT", base+"fs", "application/json", []byte(entry)); r.status != 204 {
		t.Fatalf("put: %d %s", r.status, r.body)
	}
	e.do("PUT", base+"web", "application/json", []byte(`{"type":"remote","url":"https://example.invalid/mcp"}`))
	if r := e.do("GET", base+"fs", "", nil); r.status != 200 || string(r.body) != entry {
		t.Fatalf("get: %d %s", r.status, r.body)
	}
	if !strings.Contains(readFile(t, e, "proj/.sandbox-agent/config/mcp.json"), `"web"`) {
		t.Fatal("store file not where sandbox-agent keeps it")
	}
	for _, bad := range []string{`{"type":"bogus"}`, `{"type":"local"}`, `{"type":"remote"}`, `[]`, `{`} {
		if r := e.do("PUT", base+"bad", "application/json", []byte(bad)); r.status != 422 {
			t.Errorf("bad entry %s: %d %s", bad, r.status, r.body)
		}
	}
	for _, u := range []string{"/v1/config/mcp?mcpName=x", "/v1/config/mcp?directory=proj", "/v1/config/skills?directory=proj",
		"/v1/config/skills?skillName=s"} {
		for _, method := range []string{"GET", "PUT", "DELETE"} { // required on every operation (docs/acp-proxy.md, File API)
			if r := e.do(method, u, "application/json", []byte(`{"type":"local","command":"x"}`)); r.status != 400 {
				t.Errorf("%s %s: %d", method, u, r.status)
			}
		}
	}
	if r := e.do("DELETE", base+"fs", "", nil); r.status != 204 {
		t.Fatalf("delete: %d", r.status)
	}
	if r := e.do("DELETE", base+"fs", "", nil); r.status != 204 {
		t.Fatalf("delete again: %d", r.status)
	}
	if r := e.do("GET", base+"web", "", nil); r.status != 200 {
		t.Fatalf("other entry lost: %d", r.status)
	}
	sk := "/v1/config/skills?directory=proj&skillName=s"
	if r := e.do("PUT", sk, "application/json", []byte(`{"sources":[{"type":"local","source":"./skills"}]}`)); r.status != 204 {
		t.Fatalf("skills put: %d %s", r.status, r.body)
	}
	if r := e.do("GET", sk, "", nil); r.status != 200 || !strings.Contains(string(r.body), `"source":"./skills"`) {
		t.Fatalf("skills get: %d %s", r.status, r.body)
	}
	if r := e.do("PUT", sk, "application/json", []byte(`{"sources":[{"type":"local"}]}`)); r.status != 422 {
		t.Fatalf("bad skills: %d", r.status)
	}
}

func TestAgentsRoutes(t *testing.T) {
	e := newTestEnv(t, envOpts{agents: []Agent{testAgent(t, "test"),
		{ID: "broken", Command: "true", Install: "exit 7", Check: "never"}}})
	r := e.do("GET", "/v1/agents", "", nil)
	if r.status != 200 || !strings.Contains(string(r.body), `{"id":"test","installed":false,"credentialsAvailable":false,"capabilities":{`) {
		t.Fatalf("list: %d %s", r.status, r.body)
	}
	r = e.do("POST", "/v1/agents/test/install", "application/json", []byte(`{}`))
	if r.status != 200 || r.json(t)["already_installed"] != false || readFile(t, e, ".agents/agent.mjs") == "" {
		t.Fatalf("install: %d %s", r.status, r.body)
	}
	if r := e.do("POST", "/v1/agents/test/install", "", nil); r.status != 200 || r.json(t)["already_installed"] != true {
		t.Fatalf("install again: %d %s", r.status, r.body)
	}
	if r := e.do("POST", "/v1/agents/test/install", "application/json", []byte(`{"reinstall":true}`)); r.json(t)["already_installed"] != false {
		t.Fatalf("reinstall: %s", r.body)
	}
	if r := e.do("POST", "/v1/agents/broken/install", "", nil); r.status != 502 || !strings.Contains(string(r.body), "exit code 7") {
		t.Fatalf("failing install: %d %s", r.status, r.body)
	}
	if r := e.do("GET", "/v1/agents/nope", "", nil); r.status != 404 {
		t.Fatalf("unknown agent: %d", r.status)
	}
	if r := e.do("POST", "/v1/agents/nope/install", "", nil); r.status != 404 {
		t.Fatalf("unknown agent install: %d", r.status)
	}
}
