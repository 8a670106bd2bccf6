package main

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSFTPServerFlags(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("x"), 0o644)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"missing rootDir", nil, "--rootDir is required"},
		{"empty rootDir", []string{"--rootDir", ""}, "--rootDir is required"},
		{"unknown flag", []string{"--rootDir", dir, "--bogus"}, "flag provided but not defined: -bogus"},
		{"rootDir without value", []string{"--rootDir"}, "flag needs an argument"},
		{"extra argument", []string{"--rootDir", dir, "extra"}, `unexpected argument "extra"`},
		{"missing directory", []string{"--rootDir", filepath.Join(dir, "nope")}, "cannot open root directory"},
		{"not a directory", []string{"--rootDir", file}, "cannot open root directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"sftp-server"}, tc.args...), strings.NewReader(""), &stdout, &stderr)
			if code != 1 {
				t.Fatalf("exit code %d, want 1", code)
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Fatalf("stderr %q lacks %q", stderr.String(), tc.want)
			}
			if stdout.Len() != 0 {
				t.Fatalf("stdout must carry protocol only, got %q", stdout.String())
			}
		})
	}
}

// TestSFTPServerSession: a whole session on stdin/stdout, ending cleanly
// with exit code 0 when the client closes its end.
func TestSFTPServerSession(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hi"), 0o644)
	pk := func(typ byte, fields ...[]byte) []byte {
		b := []byte{typ}
		for _, f := range fields {
			b = append(b, f...)
		}
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
	}
	u32 := func(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }
	str := func(s string) []byte { return append(u32(uint32(len(s))), s...) }
	var in bytes.Buffer
	in.Write(pk(1, u32(3)))                     // INIT
	in.Write(pk(17, u32(7), str("/hello.txt"))) // STAT
	var stdout, stderr bytes.Buffer
	if code := run([]string{"sftp-server", "--rootDir", dir}, &in, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out := stdout.Bytes()
	if len(out) < 9 || out[4] != 2 {
		t.Fatalf("no VERSION reply: %x", out)
	}
	n := binary.BigEndian.Uint32(out)
	attrs := out[4+n:]
	if len(attrs) < 9 || attrs[4] != 105 || binary.BigEndian.Uint32(attrs[5:]) != 7 {
		t.Fatalf("no ATTRS reply for id 7: %x", attrs)
	}
}
