// Package grep is a content search over a directory of an *os.Root with
// the behaviour of the TypeScript reference's grep tool, which runs
// ripgrep 13: the same pattern syntax (translated onto Go's regexp, with an
// own matcher where Go's differs), the same choice of files (.gitignore,
// .ignore, .rgignore, hidden files, --glob and --type), the same binary
// file rules and the same output text, in path order.
//
// It runs no program. Every file is opened through the root (no link is
// followed out of it), and a search is bounded in time, memory, output
// and files, and stops when its context is cancelled.
//
// Deliberate differences from the reference (which passes the path to rg
// as it is): a path outside the workspace, through ".." or a link, is
// refused with an error wrapping ErrEscape instead of searched; an omitted
// path (or "-") searches the workspace instead of hanging on rg's
// standard input; an absolute path names a place in the workspace, as
// everywhere in agentbe; the global gitignore is only the workspace's own
// .config/git/ignore (the reference runs rg with HOME set to the
// workspace, so that is the file it reads, but a .gitconfig there could
// name any host file); \b and \B are Unicode-aware as in rg.
package grep
