// Package watch is a change feed of a directory tree: it reports what is
// created, written, removed and renamed below a directory of an *os.Root
// (a workspace or a scope), recursively, with a sequence number per event
// so that a subscriber can resume after a disconnect. It is built on
// Linux's inotify; elsewhere Open fails with ErrNotSupported.
//
// # Events
//
// An Event has an Op (Created, Written, Removed, Renamed, Rescan, Ended),
// a Path relative to the watched directory (slash-separated, "." for the
// directory itself), for Renamed the OldPath, and the Kind of the entry
// (file, dir, symlink, other). What the feed promises:
//
//   - Every change made after Open returns is described by an event
//     published after the change happened, or covered by a Rescan. For
//     one path, events come in the order of the changes.
//   - Created: an entry appeared: created, moved in from outside the
//     tree, or found in a directory that appeared (a new directory is
//     watched, then listed, and what the listing finds is reported
//     created: a file created between the directory's creation and its
//     watch is not lost, and one seen by both the listing and the watch is
//     reported once).
//   - Written: a file's contents changed. A write whose writer closed the
//     file (IN_CLOSE_WRITE) is reported at once, unless the file was
//     reported less than Config.Window ago; further writes within the
//     window are reported once, at its end. A write still in progress
//     (IN_MODIFY) waits for the close or the window's end. So a burst of
//     writes to one file is one or two events, the last one after the
//     last write; a file just created gets Created at once and Written at
//     the window's end. Writes through mmap are not seen (inotify does not
//     report them).
//   - Renamed: a move inside the tree, reported once with both paths. A
//     move in from outside is Created (with the directory's contents, as
//     for a new directory); a move out is Removed, and the feed stops
//     watching what left before it reads any later event, so nothing done
//     there afterwards surfaces. Writes to a file not yet reported when it
//     is renamed are reported under the old name first (for a directory
//     renamed, every pending write in the tree is). The kernel reports a
//     rename as two events back to back; when another event comes between
//     them (or the second is not there 5 ms after the first), the move is
//     reported as Removed then Created, which describes the same result.
//   - Removed: an entry is gone. For rm -rf (or os.RemoveAll) of a
//     directory, every entry's removal is reported as rm makes it: files
//     and subdirectories before the directory holding them, the top
//     directory last. A removed directory's watch is dropped when the
//     kernel reports it gone (IN_IGNORED). The kind of a removed entry
//     other than a directory is remembered only for links and special
//     files, within a bound (16 × Config.MaxTable per feed); beyond it,
//     such an entry is reported as a file.
//   - Rescan: the feed could not follow everything under Path, and Note
//     says why. The caller lists that subtree again. Causes: the kernel's
//     queue overflowed (IN_Q_OVERFLOW; Path "."; the feed rebuilds its
//     watches from the directory itself and follows the tree again, new
//     directories included); a flood beyond the rate the feed publishes
//     and the events it may hold (Path "."; the dropped events are
//     replaced by one Rescan published after them, within a second); a
//     directory that appeared when no watch was left (Path is that
//     directory, whose changes are not reported from then on); the feed
//     found its view of the tree inconsistent with the disk (a directory
//     reached under two names, or moved without the feed seeing where;
//     Path ".", watches rebuilt).
//   - Ended: the last event. Its directory was removed or moved (Err is
//     then ErrRootGone), the feed was closed (ErrClosed), or reading
//     failed. Events held for coalescing are published before it. A
//     directory the kernel still has open elsewhere is removed, for
//     inotify, only when the last descriptor on it closes: a feed of a
//     whole workspace ends on removal only once its backend has closed its
//     own *os.Root; a move is seen at once.
//
// # Confinement
//
// The watched directory is reached from the *os.Root without following
// any symbolic link (ErrSymlink). Every directory below is opened with
// openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS) (or one element at a time
// with O_NOFOLLOW where openat2 is missing) and watched through its open
// descriptor (inotify_add_watch on /proc/self/fd/N), so a watch is never
// placed through a link. A link in the tree is an entry (KindSymlink),
// never followed: changes in what it points to are not reported. No
// descriptor on the watched directory is kept while the feed waits (one
// would delay the removal event); it is reopened for each read's events
// and checked to be the same directory (device and inode), so a directory
// swapped in under its name is never looked into.
//
// # Cursor
//
// Sequence numbers start at 1 and have no gaps; they belong to the feed,
// not to a subscriber. The feed keeps its most recent events (bounded by
// Config.RingSize and Config.RingBytes). Since(seq) returns the events
// after seq, or ErrCursorTooOld when the event after seq is no longer
// kept (or seq is ahead of the feed): the caller lists the tree again and
// continues from Seq(). Wait and Subscription.Next block for new events.
// A feed's ID distinguishes it from any other feed, of the same directory
// included, so a cursor is meaningful with its feed's ID only.
//
// # Sharing and bounds
//
// A Hub gives every opener of one directory (same device and inode,
// whatever path or *os.Root led there) with the same Budget a handle on
// one feed, counted; the last handle's Close leaves the feed running for
// Config.Linger so that a subscriber that reconnects resumes with its
// cursor. A Hub runs at most Config.MaxFeeds feeds, lingering ones
// included: when full, Open stops the feed that has lingered longest, or
// fails with ErrWatchLimit when every feed is held. The package-level Open
// gives a feed of its own.
//
// Each feed is bounded: the directories it watches (Config.MaxWatches,
// and a Budget shared by several feeds, with an optional parent, for a
// tenant and its scopes), the events it keeps (RingSize, RingBytes), its
// coalescing tables (MaxTable), and the events it publishes per second
// (Rate, beyond which events wait, coalesced, then turn into a Rescan).
// Open fails with ErrWatchLimit when the tree has more directories than
// the limits allow; a directory appearing later beyond them is a Rescan.
// Each feed uses one inotify instance (the kernel allows 128 per user by
// default, fs.inotify.max_user_instances) and one watch per directory
// (fs.inotify.max_user_watches).
//
// An idle feed costs one goroutine parked in the runtime's poller (no
// timer runs unless something is due), two descriptors (the inotify
// instance and the *os.Root's directory) and its tree of watched
// directories; read buffers are shared and taken only when events arrive.
package watch
