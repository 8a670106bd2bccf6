package fstools

import (
	"context"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/agentbe/agent-backend/mcp"
)

func (t *fsTools) getFileInfo(ctx context.Context, a *args) (*mcp.CallToolResult, error) {
	_, real, err := t.pathArg(ctx, a)
	if err != nil {
		return errResult(err)
	}
	fi, err := t.ws.Stat(ctx, real)
	if err != nil {
		return errResult(nodeErr(err, "stat", real, ""))
	}
	created, accessed := fileTimes(fi)
	var sb strings.Builder
	fmt.Fprintf(&sb, "size: %d\n", fi.Size())
	fmt.Fprintf(&sb, "created: %s\n", jsDateString(created))
	fmt.Fprintf(&sb, "modified: %s\n", jsDateString(fi.ModTime()))
	fmt.Fprintf(&sb, "accessed: %s\n", jsDateString(accessed))
	fmt.Fprintf(&sb, "isDirectory: %t\n", fi.IsDir())
	fmt.Fprintf(&sb, "isFile: %t\n", fi.Mode().IsRegular())
	fmt.Fprintf(&sb, "permissions: %03o", fi.Mode().Perm())
	return textResult(sb.String())
}

// jsDateString formats tm like JavaScript's Date.prototype.toString in the
// process's local zone: "Tue Jan 02 2024 03:04:05 GMT+0000 (Coordinated
// Universal Time)". ICU's long zone names are not in Go's standard library,
// so only UTC gets its long name; other zones show their abbreviation.
func jsDateString(tm time.Time) string {
	tm = tm.Local()
	name, off := tm.Zone()
	if off == 0 && (name == "UTC" || name == "GMT" || name == "") {
		name = "Coordinated Universal Time"
	}
	return tm.Format("Mon Jan 02 2006 15:04:05 GMT-0700") + " (" + name + ")"
}

// fileTimes returns the creation and access times the platform exposes;
// without them both fall back to the modification time.
func fileTimes(fi fs.FileInfo) (created, accessed time.Time) {
	if c, a, ok := sysTimes(fi); ok {
		return c, a
	}
	return fi.ModTime(), fi.ModTime()
}
