package watch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// watchMask is what every watched directory reports. IN_ONLYDIR: the
// descriptor path must lead to a directory; IN_EXCL_UNLINK: nothing about
// files already unlinked. No IN_DONT_FOLLOW: the watch is added on
// /proc/self/fd/N, a link that must be followed to the open directory.
const watchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MODIFY | unix.IN_CLOSE_WRITE |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF |
	unix.IN_ONLYDIR | unix.IN_EXCL_UNLINK

// moveGrace is how long an IN_MOVED_FROM waits for its IN_MOVED_TO when
// a read ends between the two (the kernel queues them back to back, so
// this only covers a reader that raced the rename); after it the entry
// counts as moved out of the tree.
const moveGrace = 5 * time.Millisecond

// readBufSize holds at least 60 events of the longest name.
const readBufSize = 16 << 10

// testHooks are seams for the tests: beforeRead runs in the reader before
// each read of the inotify descriptor.
var testHooks struct {
	beforeRead func()
}

// engine is the Linux reader of one feed. All its fields but closing
// belong to the reader goroutine (and to startFeed before it starts).
type engine struct {
	f      *feed
	cfg    Config
	budget *Budget

	ino *os.File // the inotify instance, non-blocking, in the runtime poller
	ifd int
	// The watched directory is reached through tg: an open descriptor on
	// it would delay its IN_DELETE_SELF until closed, so one (bfd) is held
	// only while a read's events are processed, checked to be the same
	// directory each time.
	tg     *target
	afd    int
	bfd    int
	dirfds map[*node]int // directories opened for this read (dirFd)

	root     *node
	nodes    map[int32]*node
	nwatches int
	specials int
	co       *coalescer
	held     *heldMove

	// seen holds the paths a listing reported created while events that
	// may report the same creation are still queued: the next seenBytes
	// bytes of events (counted from bufLeft, what remains of the current
	// read, plus what the kernel held when the listing ended).
	seen      map[string]struct{}
	seenBytes int
	bufLeft   int

	limitHit bool   // a directory could not be watched for lack of watches
	lost     string // why the tree must be rebuilt after the current event
	building bool   // the tree is being built from the disk (watchRoot, resync)
	endErr   error  // set when the feed must end
	endNote  string // the Ended event's note
	closing  atomic.Bool

	beforeRead func()
}

// heldMove is an IN_MOVED_FROM waiting for its IN_MOVED_TO.
type heldMove struct {
	cookie uint32
	from   *node
	name   string
	dir    bool
	at     time.Time
}

// startFeed watches the tree of tg (which it takes over) and starts the
// feed's reader.
func startFeed(tg *target, cfg *Config) (*feed, error) {
	ifd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		tg.close()
		if err == unix.EMFILE {
			return nil, fmt.Errorf("%w: no inotify instance left (fs.inotify.max_user_instances, or the process is out of descriptors): %v", ErrWatchLimit, err)
		}
		return nil, fmt.Errorf("watch: inotify_init1: %w", err)
	}
	now := time.Now()
	e := &engine{
		cfg:        *cfg,
		budget:     cfg.Budget,
		ino:        os.NewFile(uintptr(ifd), "inotify"),
		ifd:        ifd,
		tg:         tg,
		afd:        fdOf(tg.anchor),
		bfd:        -1,
		nodes:      make(map[int32]*node),
		co:         newCoalescer(cfg, now),
		beforeRead: testHooks.beforeRead,
	}
	e.f = &feed{
		id:   newID(),
		ring: newRing(cfg.RingSize, cfg.RingBytes),
		done: make(chan struct{}),
		dev:  tg.dev,
		ino:  tg.ino,
		stop: e.stop,
	}
	if err := e.watchRoot(); err != nil {
		e.release()
		return nil, err
	}
	e.dropBase()
	e.co.take() // nothing is reported about what was there before
	e.f.watches.Store(int64(e.nwatches))
	go e.run()
	return e.f, nil
}

// base returns a descriptor of the watched directory, held until
// dropBase, or false when it is no longer where it was (the events that
// follow say what happened to it).
func (e *engine) base() (int, bool) {
	if e.bfd >= 0 {
		return e.bfd, true
	}
	if e.tg.dir == "." {
		e.bfd = e.afd
		return e.bfd, true
	}
	fd, err := openBeneath(e.afd, e.tg.dir, unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return -1, false
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Dev != e.tg.dev || st.Ino != e.tg.ino {
		unix.Close(fd)
		return -1, false
	}
	e.bfd = fd
	return fd, true
}

// dropBase closes what base and dirFd opened.
func (e *engine) dropBase() {
	if e.bfd >= 0 && e.bfd != e.afd {
		unix.Close(e.bfd)
	}
	e.bfd = -1
	for n, fd := range e.dirfds {
		if fd >= 0 {
			unix.Close(fd)
		}
		delete(e.dirfds, n)
	}
}

// openUnder opens p (relative to the watched directory) as openBeneath
// does.
func (e *engine) openUnder(p string, flags int) (int, error) {
	bfd, ok := e.base()
	if !ok {
		return -1, unix.ENOENT
	}
	return openBeneath(bfd, p, flags)
}

// watchRoot watches the watched directory and every directory below it,
// reporting nothing. It fails when the tree needs more watches than
// allowed.
func (e *engine) watchRoot() error {
	if !e.take() {
		return fmt.Errorf("%w: %d watches allowed", ErrWatchLimit, e.cfg.MaxWatches)
	}
	bfd, ok := e.base()
	if !ok {
		e.give(1)
		return fmt.Errorf("watch: %w", ErrRootGone)
	}
	wd, err := unix.InotifyAddWatch(e.ifd, "/proc/self/fd/"+strconv.Itoa(bfd), watchMask)
	if err != nil {
		e.give(1)
		if err == unix.ENOSPC {
			return fmt.Errorf("%w: the kernel's (fs.inotify.max_user_watches)", ErrWatchLimit)
		}
		return fmt.Errorf("watch: inotify_add_watch: %w", err)
	}
	e.root = &node{wd: int32(wd)}
	e.nodes[e.root.wd] = e.root
	e.building = true
	e.scanRoot(false)
	e.building = false
	if e.limitHit {
		return fmt.Errorf("%w: the tree has more directories than the %d watches allowed", ErrWatchLimit, min(e.cfg.MaxWatches, e.budgetLeft()))
	}
	return nil
}

// budgetLeft returns how many watches the feed could hold at most.
func (e *engine) budgetLeft() int {
	n := e.cfg.MaxWatches
	for b := e.budget; b != nil; b = b.parent {
		n = min(n, b.Max())
	}
	return n
}

// take counts one watch against the feed's limit and budget.
func (e *engine) take() bool {
	if e.nwatches >= e.cfg.MaxWatches || !e.budget.acquire(1) {
		return false
	}
	e.nwatches++
	return true
}

// give returns n watches.
func (e *engine) give(n int) {
	e.nwatches -= n
	e.budget.release(int64(n))
}

// scanRoot lists the watched directory again and watches its
// subdirectories, reporting what it finds when report is set.
func (e *engine) scanRoot(report bool) {
	fd, err := e.openUnder(".", unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return
	}
	e.scan(e.root, fd, report)
}

// addDir watches the new directory name in parent and the tree below it,
// reporting it when reportSelf is set and its contents when
// reportContents is.
func (e *engine) addDir(now time.Time, parent *node, name string, reportSelf, reportContents bool) {
	p := parent.join(name)
	if reportSelf && !e.wasSeen(p) {
		e.co.created(now, p, KindDir)
	}
	fd, err := e.openUnder(p, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return // gone or replaced already: the events that follow say so
	}
	e.watchDir(now, parent, name, fd, reportContents)
}

// watchDir adds a watch on the open directory fd, the entry name of
// parent, then lists it and does the same for its subdirectories: a file
// created between the directory's creation and the watch is found by the
// listing, one created after it by the watch. It closes fd.
func (e *engine) watchDir(now time.Time, parent *node, name string, fd int, report bool) {
	defer func() {
		if fd >= 0 {
			unix.Close(fd)
		}
	}()
	p := parent.join(name)
	if !e.take() {
		e.limitHit = true
		e.co.rescan(now, p, "watch limit reached: changes below this directory are not reported")
		return
	}
	wd, err := unix.InotifyAddWatch(e.ifd, "/proc/self/fd/"+strconv.Itoa(fd), watchMask)
	if err != nil {
		e.give(1)
		if err == unix.ENOSPC {
			e.limitHit = true
			e.co.rescan(now, p, "the kernel's watch limit is reached: changes below this directory are not reported")
		}
		return
	}
	if old := e.nodes[int32(wd)]; old != nil {
		// Already watched: the same directory seen twice (its creation
		// and a listing of its parent), or our tree is wrong.
		e.give(1)
		if old.path() != p {
			e.lostTrack("a directory was found under two names")
		}
		return
	}
	n := &node{wd: int32(wd), name: name}
	parent.attach(n)
	e.nodes[n.wd] = n
	e.scan(n, fd, report)
	fd = -1
	if report {
		e.holdSeen()
	}
}

// scan lists the open directory fd (the watched node n), watches its
// subdirectories and remembers its special entries; when report is set,
// every entry is reported created. It closes fd.
func (e *engine) scan(n *node, fd int, report bool) {
	ents := readDirents(fd)
	now := time.Now()
	for _, d := range ents {
		k := direntKind(fd, d)
		if report {
			p := n.join(d.name)
			e.co.created(now, p, k)
			e.markSeen(p)
		}
		switch k {
		case KindDir:
			cfd, err := unix.Openat(fd, d.name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err == nil {
				e.watchDir(now, n, d.name, cfd, report)
			}
		case KindSymlink, KindOther:
			e.setSpecial(n, d.name, k)
		}
	}
	unix.Close(fd)
}

// markSeen records that p was reported created by a listing.
func (e *engine) markSeen(p string) {
	if e.seen == nil {
		e.seen = make(map[string]struct{})
	}
	if len(e.seen) < e.cfg.MaxTable {
		e.seen[p] = struct{}{}
	}
}

// holdSeen keeps the seen paths until every event queued now is read.
func (e *engine) holdSeen() {
	if len(e.seen) == 0 {
		return
	}
	q, err := unix.IoctlGetInt(e.ifd, unix.TIOCINQ) // FIONREAD: bytes of events queued
	if err != nil {
		q = 1 << 30 // unknown: until the next read that drains the queue
	}
	e.seenBytes = max(e.seenBytes, e.bufLeft+q)
}

// wasSeen reports (once) whether a listing already reported p created.
func (e *engine) wasSeen(p string) bool {
	if _, ok := e.seen[p]; ok {
		delete(e.seen, p)
		return true
	}
	return false
}

// readDirents lists the open directory fd (nothing on error).
func readDirents(fd int) []dirent {
	var out []dirent
	buf := make([]byte, 8192)
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			return out
		}
		var ok bool
		if out, ok = parseDirents(out, buf[:n]); !ok {
			return out
		}
	}
}

// direntKind returns the kind of d, an entry of the directory fd, from its
// d_type or, where the file system leaves it unknown, an lstat.
func direntKind(fd int, d dirent) Kind {
	switch d.typ {
	case unix.DT_DIR:
		return KindDir
	case unix.DT_REG:
		return KindFile
	case unix.DT_LNK:
		return KindSymlink
	case unix.DT_UNKNOWN:
		var st unix.Stat_t
		if unix.Fstatat(fd, d.name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			return KindFile
		}
		return modeKind(st.Mode)
	}
	return KindOther
}

func modeKind(mode uint32) Kind {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return KindDir
	case unix.S_IFREG:
		return KindFile
	case unix.S_IFLNK:
		return KindSymlink
	}
	return KindOther
}

// kindOf returns the kind of the entry name of n (not a directory: the
// kernel says when it is), following no link; a file when it is gone
// already. The directory is opened once per read (dirFd).
func (e *engine) kindOf(n *node, name string) Kind {
	fd, ok := e.dirFd(n)
	if !ok {
		return KindFile
	}
	var st unix.Stat_t
	if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return KindFile
	}
	return modeKind(st.Mode)
}

// dirFd returns a descriptor (O_PATH) of the watched directory n, opened
// without following links and held until dropBase, like base.
func (e *engine) dirFd(n *node) (int, bool) {
	if n == e.root {
		return e.base()
	}
	if fd, ok := e.dirfds[n]; ok {
		return fd, fd >= 0
	}
	fd, err := e.openUnder(n.path(), unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		fd = -1
	}
	if e.dirfds == nil {
		e.dirfds = make(map[*node]int)
	}
	e.dirfds[n] = fd
	return fd, fd >= 0
}

// maxSpecials bounds the special entries remembered, per MaxTable.
const specialsPerTable = 16

func (e *engine) setSpecial(n *node, name string, k Kind) {
	if k != KindSymlink && k != KindOther {
		e.takeSpecial(n, name)
		return
	}
	if _, ok := n.special[name]; !ok {
		if e.specials >= specialsPerTable*e.cfg.MaxTable {
			return
		}
		e.specials++
	}
	if n.special == nil {
		n.special = make(map[string]Kind)
	}
	n.special[name] = k
}

// takeSpecial forgets name in n, returning its kind (a file unless
// remembered).
func (e *engine) takeSpecial(n *node, name string) Kind {
	k, ok := n.special[name]
	if !ok {
		return KindFile
	}
	delete(n.special, name)
	e.specials--
	return k
}

// forget stops watching n and every directory below it; rmWatch says
// whether n's watch is still in the kernel (the ones below always are).
func (e *engine) forget(n *node, rmWatch bool) {
	for _, c := range n.children {
		e.forget(c, true)
	}
	if e.nodes[n.wd] == n {
		delete(e.nodes, n.wd)
		e.specials -= len(n.special)
		e.give(1)
		if rmWatch {
			unix.InotifyRmWatch(e.ifd, uint32(n.wd))
		}
	}
	n.detach()
}

// lostTrack asks for a resync once the current event is processed (not
// in the middle of a listing, whose directory the resync may forget).
func (e *engine) lostTrack(why string) {
	// During the initial walk or a resync the tree is built from the disk:
	// a directory found twice is one mounted at two places, followed under
	// the first name found.
	if e.lost == "" && !e.building {
		e.lost = why
	}
}

// resync rebuilds the watches from the directory itself after the feed
// lost track (the kernel dropped events, or its tree no longer matches
// the disk), and reports a Rescan of the whole tree.
func (e *engine) resync(now time.Time, note string) {
	e.lost = ""
	e.co.reset()
	e.held = nil
	for _, c := range e.root.children {
		e.forget(c, true)
	}
	e.specials -= len(e.root.special)
	e.root.special = nil
	e.limitHit = false
	e.building = true
	e.scanRoot(false)
	e.building = false
	e.co.rescan(now, ".", note)
}

// run is the reader: it reads the inotify descriptor (parked in the
// runtime poller while idle, with a deadline only while something is
// due), turns the events into the feed's, and publishes them.
func (e *engine) run() {
	rc, err := e.ino.SyscallConn()
	if err != nil {
		e.end(time.Now(), fmt.Errorf("watch: %w", err), "reading events failed")
		return
	}
	for {
		due, ok := e.co.deadline()
		if e.held != nil {
			if t := e.held.at.Add(moveGrace); !ok || t.Before(due) {
				due, ok = t, true
			}
		}
		if !ok {
			due = time.Time{}
		}
		e.ino.SetReadDeadline(due)
		e.dropBase()
		if e.closing.Load() {
			e.end(time.Now(), ErrClosed, "feed closed")
			return
		}
		if e.beforeRead != nil {
			e.beforeRead()
		}
		buf, err := e.read(rc)
		now := time.Now()
		switch {
		case err == nil:
			e.handle(now, *buf)
			putReadBuf(buf)
		case errors.Is(err, os.ErrDeadlineExceeded):
			if e.closing.Load() {
				e.end(now, ErrClosed, "feed closed")
				return
			}
		default:
			e.end(now, fmt.Errorf("watch: reading events: %w", err), "reading events failed")
			return
		}
		if e.held != nil && !now.Before(e.held.at.Add(moveGrace)) {
			e.moveOut(now)
		}
		if e.endErr != nil {
			e.end(now, e.endErr, e.endNote)
			return
		}
		e.co.tick(now)
		e.publish(now, e.co.take())
	}
}

// readBufs holds read buffers, taken only once events are there: an idle
// feed waits for its descriptor to become readable without one.
var readBufs = sync.Pool{New: func() any { b := make([]byte, readBufSize); return &b }}

func putReadBuf(b *[]byte) {
	*b = (*b)[:readBufSize]
	readBufs.Put(b)
}

// read waits (in the runtime poller, with the read deadline) until events
// are there and reads them into a buffer of readBufs.
func (e *engine) read(rc syscall.RawConn) (*[]byte, error) {
	var buf *[]byte
	var rerr error
	err := rc.Read(func(fd uintptr) bool {
		b := readBufs.Get().(*[]byte)
		var n int
		for {
			n, rerr = unix.Read(int(fd), *b)
			if rerr != unix.EINTR {
				break
			}
		}
		if rerr == unix.EAGAIN {
			readBufs.Put(b)
			return false
		}
		if rerr == nil {
			*b = (*b)[:n]
			buf = b
		} else {
			readBufs.Put(b)
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	return buf, rerr
}

// publish hands evs to the ring and updates the counters.
func (e *engine) publish(now time.Time, evs []Event) {
	for i := range evs {
		if evs[i].Op == Rescan {
			e.f.rescans.Add(1)
		}
	}
	e.f.ring.publish(now, evs)
	e.f.watches.Store(int64(e.nwatches))
	e.f.coalesced.Store(int64(e.co.coalesced))
	e.f.dropped.Store(int64(e.co.droppedTotal))
}

// end publishes what is left and the Ended event, and releases
// everything.
func (e *engine) end(now time.Time, err error, note string) {
	if e.held != nil {
		e.moveOut(now)
	}
	e.co.drain(now)
	e.publish(now, e.co.take())
	e.f.ring.end(now, Event{Op: Ended, Path: ".", Note: note}, err)
	e.release()
	close(e.f.done)
}

// release closes the descriptors and returns the watches.
func (e *engine) release() {
	e.ino.Close() // the kernel drops every watch with it
	e.dropBase()
	e.tg.close()
	e.give(e.nwatches)
	e.f.watches.Store(0)
}

// stop ends the feed and waits for the reader.
func (e *engine) stop() {
	e.closing.Store(true)
	e.ino.SetReadDeadline(time.Unix(1, 0)) // wakes the reader; fails once it closed the file
	<-e.f.done
}

// handle processes one read's worth of inotify events.
func (e *engine) handle(now time.Time, buf []byte) {
	for len(buf) >= unix.SizeofInotifyEvent && e.endErr == nil {
		wd := int32(binary.NativeEndian.Uint32(buf[0:]))
		mask := binary.NativeEndian.Uint32(buf[4:])
		cookie := binary.NativeEndian.Uint32(buf[8:])
		nlen := int(binary.NativeEndian.Uint32(buf[12:]))
		if unix.SizeofInotifyEvent+nlen > len(buf) {
			return
		}
		name := buf[unix.SizeofInotifyEvent : unix.SizeofInotifyEvent+nlen]
		if i := indexNUL(name); i >= 0 {
			name = name[:i]
		}
		buf = buf[unix.SizeofInotifyEvent+nlen:]
		e.bufLeft = len(buf)
		// This event was counted in seenBytes if it was queued when a
		// listing ended; one that starts a listing is not in the new
		// count, so the count is lowered first and the paths forgotten
		// after the event.
		e.seenBytes = max(e.seenBytes-(unix.SizeofInotifyEvent+nlen), 0)
		e.event(now, wd, mask, cookie, string(name))
		if e.lost != "" {
			e.resync(now, e.lost)
		}
		if e.seenBytes == 0 && len(e.seen) > 0 {
			clear(e.seen)
		}
	}
	e.bufLeft = 0
}

// event processes one inotify event.
func (e *engine) event(now time.Time, wd int32, mask, cookie uint32, name string) {
	if e.held != nil && (mask&unix.IN_MOVED_TO == 0 || cookie != e.held.cookie) {
		e.moveOut(now)
	}
	if mask&unix.IN_Q_OVERFLOW != 0 {
		e.resync(now, "the kernel's event queue overflowed")
		return
	}
	n := e.nodes[wd]
	if n == nil {
		return // a watch already forgotten
	}
	isRoot := n == e.root
	switch {
	case mask&unix.IN_IGNORED != 0:
		if isRoot {
			e.finish(ErrRootGone, "watched directory removed")
			return
		}
		e.forget(n, false)
		return
	case mask&unix.IN_UNMOUNT != 0:
		if isRoot {
			e.finish(ErrRootGone, "file system of the watched directory unmounted")
		}
		return
	case mask&unix.IN_DELETE_SELF != 0:
		if isRoot {
			e.finish(ErrRootGone, "watched directory removed")
		}
		return
	case mask&unix.IN_MOVE_SELF != 0:
		switch {
		case isRoot:
			e.finish(ErrRootGone, "watched directory moved")
		case n.moves > 0:
			n.moves--
		default:
			e.lostTrack("a directory moved without the feed seeing where")
		}
		return
	}
	if !validName(name) {
		return // the kernel never names an entry so; nothing to report
	}
	isDir := mask&unix.IN_ISDIR != 0
	switch {
	case mask&unix.IN_CREATE != 0:
		e.appeared(now, n, name, isDir)
	case mask&unix.IN_MOVED_FROM != 0:
		e.held = &heldMove{cookie: cookie, from: n, name: name, dir: isDir, at: now}
	case mask&unix.IN_MOVED_TO != 0:
		if e.held != nil {
			e.movePair(now, n, name)
		} else {
			e.appeared(now, n, name, isDir)
		}
	case mask&unix.IN_DELETE != 0:
		k := KindDir
		if !isDir {
			k = e.takeSpecial(n, name)
		}
		e.co.removed(now, n.join(name), k)
	case mask&unix.IN_CLOSE_WRITE != 0:
		e.co.written(now, n.join(name), true)
	case mask&unix.IN_MODIFY != 0:
		e.co.written(now, n.join(name), false)
	}
}

// validName reports whether name can be one entry of a directory.
func validName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.Contains(name, "/")
}

// finish marks the feed to end after this event.
func (e *engine) finish(err error, note string) {
	if e.endErr == nil {
		e.endErr, e.endNote = err, note
	}
}

// appeared reports the entry name that appeared in n (created, or moved
// in from outside the tree).
func (e *engine) appeared(now time.Time, n *node, name string, isDir bool) {
	if isDir {
		e.addDir(now, n, name, true, true)
		return
	}
	p := n.join(name)
	k := e.kindOf(n, name)
	e.setSpecial(n, name, k)
	if !e.wasSeen(p) {
		e.co.created(now, p, k)
	}
}

// movePair reports the held IN_MOVED_FROM and its IN_MOVED_TO (name in
// to) as one rename.
func (e *engine) movePair(now time.Time, to *node, name string) {
	h := e.held
	e.held = nil
	oldP, newP := h.from.join(h.name), to.join(name)
	if !h.dir {
		k := e.takeSpecial(h.from, h.name)
		e.setSpecial(to, name, k)
		e.co.renamed(now, oldP, newP, k)
		return
	}
	e.co.renamed(now, oldP, newP, KindDir)
	child := h.from.children[h.name]
	if t := to.children[name]; t != nil && t != child {
		t.detach() // an empty directory replaced: its IN_IGNORED follows
	}
	if child == nil {
		// Never watched (it appeared while events were lost): watch it
		// now and report what it holds.
		e.addDir(now, to, name, false, true)
		return
	}
	child.detach()
	child.name = name
	to.attach(child)
	child.moves++
}

// moveOut reports the held IN_MOVED_FROM, whose IN_MOVED_TO did not come,
// as moved out of the tree: removed, and its watches dropped before any
// later event (which could come from outside the tree) is read.
func (e *engine) moveOut(now time.Time) {
	h := e.held
	e.held = nil
	k := KindDir
	if h.dir {
		if child := h.from.children[h.name]; child != nil {
			e.forget(child, true)
		}
	} else {
		k = e.takeSpecial(h.from, h.name)
	}
	e.co.removed(now, h.from.join(h.name), k)
}
