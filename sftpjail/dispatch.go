package sftpjail

import (
	"fmt"
	"time"
)

// dispatch decodes one request and answers it: READ and WRITE run
// concurrently unless they touch a range another request in flight writes
// (or, for an append handle, at all); every other request first waits for
// those in flight. Replies are written in request order either way.
// It returns an error only for a malformed packet, which ends the session.
func (s *session) dispatch(body []byte, buf *[]byte) error {
	typ := body[0]
	d := decoder{b: body[1:]}
	id := d.u32()
	switch typ {
	case fxpRead, fxpWrite:
		return s.dispatchData(typ, id, &d, buf)
	}
	defer putBuf(buf)
	s.barrier()
	chg, changes := s.peekChange(typ, d)
	var reply *[]byte
	switch typ {
	case fxpOpen:
		reply = s.open(id, &d)
	case fxpClose:
		reply = s.close(id, &d)
	case fxpLstat:
		reply = s.stat(id, &d, false)
	case fxpStat:
		reply = s.stat(id, &d, true)
	case fxpFstat:
		reply = s.fstat(id, &d)
	case fxpSetstat:
		reply = s.setstat(id, &d)
	case fxpFsetstat:
		reply = s.fsetstat(id, &d)
	case fxpOpendir:
		reply = s.opendir(id, &d)
	case fxpReaddir:
		reply = s.readdir(id, &d)
	case fxpRemove:
		reply = s.remove(id, &d)
	case fxpMkdir:
		reply = s.mkdir(id, &d)
	case fxpRmdir:
		reply = s.rmdir(id, &d)
	case fxpRealpath:
		reply = s.realpath(id, &d)
	case fxpRename:
		reply = s.rename(id, &d, false)
	case fxpReadlink:
		reply = s.readlink(id, &d)
	case fxpSymlink:
		reply = s.symlink(id, &d)
	case fxpExtended:
		reply = s.extended(id, &d)
	case fxpInit:
		return fmt.Errorf("%w: INIT after the handshake", ErrBadPacket)
	default:
		if !d.ok() {
			return fmt.Errorf("%w: packet type %d too short", ErrBadPacket, typ)
		}
		reply = statusPacket(id, statusOpUnsupported, fmt.Sprintf("unsupported request type %d", typ))
	}
	if reply == nil || !d.ok() {
		if reply != nil {
			putBuf(reply)
		}
		return fmt.Errorf("%w: request type %d", ErrBadPacket, typ)
	}
	if changes {
		s.reportChange(chg, reply)
	}
	s.send(reply)
	return nil
}

// dispatchData handles READ and WRITE.
func (s *session) dispatchData(typ byte, id uint32, d *decoder, buf *[]byte) error {
	hid := d.bytes()
	off := d.u64()
	var n uint64
	var data []byte
	if typ == fxpRead {
		n = uint64(d.u32())
		if n > maxData {
			n = maxData
		}
	} else {
		data = d.bytes()
		n = uint64(len(data))
	}
	if !d.ok() {
		putBuf(buf)
		return fmt.Errorf("%w: request type %d", ErrBadPacket, typ)
	}
	h := s.handles.get(hid)
	if h == nil || h.dir {
		putBuf(buf)
		s.barrier()
		s.send(statusPacket(id, statusFailure, errBadHandle.Error()))
		return nil
	}
	sp := span{h: h, start: off, end: off + n, write: typ == fxpWrite}
	if sp.end < sp.start {
		sp.end = ^uint64(0)
	}
	work := func() *[]byte {
		if typ == fxpRead {
			return s.read(id, h, off, int(n))
		}
		return s.write(id, h, off, data)
	}
	if !s.goConcurrent() || (sp.write && h.append) || !s.claim(sp) {
		s.barrier()
		if typ == fxpRead && h.regular && s.spl != nil && s.spliceRead(id, h, off, int(n)) {
			putBuf(buf)
			return nil
		}
		start := time.Now()
		reply := work()
		s.noteDuration(time.Since(start))
		s.send(reply)
		putBuf(buf)
		return nil
	}
	s.sem <- struct{}{}
	s.inflight.Add(1)
	prev, done := s.lastDone, make(chan struct{})
	s.lastDone = done
	go func() {
		defer s.inflight.Done()
		start := time.Now()
		reply := work()
		s.noteDuration(time.Since(start))
		putBuf(buf)
		s.release(sp)
		// Replies leave in request order: clients (OpenSSH's sftp among
		// them) work less when data arrives in sequence.
		if prev != nil {
			<-prev
		}
		s.sendNow(reply)
		close(done)
		<-s.sem // only after the reply is written: bounds memory too
	}()
	return nil
}

// claim records sp as in flight unless it conflicts with a request already
// in flight: same handle, overlapping range, at least one of them a write.
func (s *session) claim(sp span) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.pending {
		if p.h == sp.h && (p.write || sp.write) && p.start < sp.end && sp.start < p.end {
			return false
		}
	}
	s.pending = append(s.pending, sp)
	return true
}

func (s *session) release(sp span) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, p := range s.pending {
		if p == sp {
			s.pending = append(s.pending[:i], s.pending[i+1:]...)
			return
		}
	}
}

// Adaptive concurrency. A READ or WRITE served from the page cache takes
// tens of microseconds, less than handing it to another goroutine (and
// thread) costs, so a session serves data requests inline while they are
// fast. Once slowRun of them in a row take longer than slowOp (the file
// system is blocking on a device), the next concurrentBurst data requests
// go to up to Workers goroutines, so their waits overlap; every slow
// request renews the burst. One slow request is not enough: on a busy
// machine a page-cache copy preempted by another process takes a
// millisecond too, and a burst would then forgo splicing for nothing.
const (
	slowOp          = time.Millisecond
	slowRun         = 3
	concurrentBurst = 256
)

// goConcurrent reports whether the next data request may run in its own
// goroutine, using up one request of the burst.
func (s *session) goConcurrent() bool {
	if s.serial {
		return false
	}
	if s.alwaysConcurrent {
		return true
	}
	for {
		n := s.burst.Load()
		if n <= 0 {
			return false
		}
		if s.burst.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

func (s *session) noteDuration(d time.Duration) {
	if s.serial {
		return
	}
	if d < slowOp {
		s.slow.Store(0)
		return
	}
	if s.slow.Add(1) >= slowRun || s.burst.Load() > 0 {
		s.burst.Store(concurrentBurst)
	}
}
