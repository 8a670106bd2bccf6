package daemon

import (
	"context"
	"errors"
	"io/fs"
	"strings"

	agentbe "github.com/agentbe/agent-backend"
)

// tsFileOp is one of the file operations the TypeScript client performs by
// running a shell command over SSH (agent-backend@0.13.2):
//
//	rm [-r] [-f] "<path>"     (its rm)
//	mkdir -p "<path>"         (its mkdir with recursive)
//
// The daemon performs them as file operations through the jailed backend
// instead of a shell: no shell expands a `$(…)` hidden in a file name (the
// reference daemon does), the jail applies to the path, and a recursive rm
// of a workspace path is not refused by the dangerous-command check, which
// blocks `rm -r` with any '/' (the client always sends absolute paths).
type tsFileOp struct {
	op        string // "rm" or "mkdir"
	path      string
	recursive bool
	force     bool
}

// parseTSFileOp recognises exactly the commands above; the path may not
// contain the characters the shell would expand or unescape inside double
// quotes.
func parseTSFileOp(cmd string) (tsFileOp, bool) {
	var op tsFileOp
	rest, ok := strings.CutPrefix(cmd, "rm ")
	if ok {
		op.op = "rm"
		if r, ok := strings.CutPrefix(rest, "-r "); ok {
			op.recursive, rest = true, r
		}
		if r, ok := strings.CutPrefix(rest, "-f "); ok {
			op.force, rest = true, r
		}
	} else if rest, ok = strings.CutPrefix(cmd, "mkdir -p "); ok {
		op.op = "mkdir"
	} else {
		return tsFileOp{}, false
	}
	if len(rest) < 3 || rest[0] != '"' || rest[len(rest)-1] != '"' {
		return tsFileOp{}, false
	}
	op.path = rest[1 : len(rest)-1]
	if op.path == "" || strings.ContainsAny(op.path, "\"$`\\\x00\n") {
		return tsFileOp{}, false
	}
	return op, true
}

// run performs op on b and returns what the shell command's exit would
// have said: nil, or an error whose text goes to stderr with status 1.
func (op tsFileOp) run(ctx context.Context, b agentbe.Backend) error {
	switch op.op {
	case "mkdir":
		return b.Mkdir(ctx, op.path)
	default:
		err := b.Remove(ctx, op.path, agentbe.RemoveOptions{Recursive: op.recursive, Force: op.force})
		if op.force && errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
}
