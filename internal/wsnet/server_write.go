package wsnet

import (
	"encoding/binary"
	"time"
)

// maxPendingWrite bounds the bytes queued on a ServerConn: a Write beyond it
// waits for the flusher, so a peer that stops reading stops the writer, as
// a direct write would.
const maxPendingWrite = 1 << 20

// maxInlineWrite is the largest frame written by its writer itself when
// nothing is queued and the frame before was no larger: a small reply (an
// SFTP status) then costs no hand-off to the flusher goroutine (with every
// frame handed off, a 4 KiB Remote write took 0.65-0.72 ms instead of
// 0.34-0.41 ms in alternating runs). It is below
// 4 KiB because x/crypto/ssh writes through a 4 KiB bufio.Writer: a data
// packet reaches us as a 4 KiB head and its rest, and those, like the
// small tail of a bulk transfer, must stay in the queue to go out
// together (inlining them cost 64 MiB reads a tenth of their throughput).
const maxInlineWrite = 4<<10 - 1

// maxKeptSpare is the largest flusher buffer kept for reuse once the queue
// is empty (an idle connection does not hold a megabyte).
const maxKeptSpare = 256 << 10

// Write sends p as one binary frame (see queueFrame).
func (c *ServerConn) Write(p []byte) (int, error) {
	if err := c.queueFrame(opBinary, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// queueFrame appends one unmasked frame to the write queue and returns;
// a flusher goroutine, started when the queue was empty and ending when it
// is, writes everything queued with one write call (a small frame on an
// idle connection is written at once by its writer, see maxInlineWrite).
// Why: the SSH layer writes one frame per 32 KiB packet, and one write
// each, with the reader's wake-up behind it, made the daemon's socket
// writes a quarter of a 64 MiB Remote read (pprof); while one write is
// under way, the next packets gather behind it. The first write error is
// kept and returned by every later call.
func (c *ServerConn) queueFrame(op byte, p []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	for {
		switch {
		case c.closed || c.released:
			return errServerClosed
		case c.werr != nil:
			return c.werr
		case len(c.pend) < maxPendingWrite:
			c.pend = appendFrame(c.pend, op, p)
			small, afterSmall := len(p) <= maxInlineWrite, !c.lastBig
			c.lastBig = !small
			if !c.flushing {
				c.flushing = true
				if small && afterSmall {
					c.flushLocked(true)
					return c.werr
				}
				go c.flush()
			}
			return nil
		}
		c.wcond.Wait()
	}
}

// flush writes the queue until it is empty or a write fails.
func (c *ServerConn) flush() {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.flushLocked(false)
}

// flushLocked is flush with wmu held (released around each write). With
// inline set it is a writer's own call: after one write it hands what
// others queued meanwhile to a flusher goroutine instead of writing it.
func (c *ServerConn) flushLocked(inline bool) {
	for len(c.pend) > 0 && c.werr == nil {
		out := c.pend
		c.pend = c.spare[:0]
		c.wmu.Unlock()
		_, err := c.raw.Write(out)
		c.wmu.Lock()
		c.spare = out[:0]
		if err != nil {
			c.werr = err
		}
		c.wcond.Broadcast()
		if inline && len(c.pend) > 0 && c.werr == nil {
			go c.flush()
			return
		}
	}
	// Both buffers may have grown to the queue's bound during a bulk
	// transfer; an idle connection keeps neither at that size.
	if cap(c.spare) > maxKeptSpare {
		c.spare = nil
	}
	if len(c.pend) == 0 && cap(c.pend) > maxKeptSpare {
		c.pend = nil
	}
	c.flushing = false
	c.wcond.Broadcast()
}

// appendFrame appends an unmasked frame (header and payload) to b.
func appendFrame(b []byte, op byte, p []byte) []byte {
	b = append(b, 0x80|op)
	switch n := len(p); {
	case n <= 125:
		b = append(b, byte(n))
	case n <= 0xffff:
		b = append(b, 126)
		b = binary.BigEndian.AppendUint16(b, uint16(n))
	default:
		b = append(b, 127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	return append(b, p...)
}

// Close is what the layer above (the daemon's SSH server) calls, both when
// it ends normally and when it fails, so it cannot choose the close code:
// it stops reads and writes, and the connection's owner then sends the
// close frame with the code that fits (1000 for a normal end, 1011 for a
// failure) through CloseWith.
func (c *ServerConn) Close() error {
	c.wmu.Lock()
	c.released = true
	c.wcond.Broadcast()
	c.wmu.Unlock()
	return c.raw.SetReadDeadline(time.Unix(1, 0))
}

// CloseWith sends what is queued, then a close frame with code and reason
// (once; a reason is cut to the 123 bytes a control frame can hold), and
// closes the connection; later calls do nothing. A peer that
// does not read gets one second for all of it.
func (c *ServerConn) CloseWith(code int, reason string) error {
	c.wmu.Lock()
	if c.closed {
		c.wmu.Unlock()
		return nil
	}
	c.closed = true
	c.wcond.Broadcast()
	if len(reason) > 123 {
		reason = reason[:123]
	}
	payload := binary.BigEndian.AppendUint16(make([]byte, 0, 2+len(reason)), uint16(code))
	payload = append(payload, reason...)
	c.raw.SetWriteDeadline(time.Now().Add(time.Second))
	for c.flushing {
		c.wcond.Wait()
	}
	err := c.werr
	if err == nil {
		_, err = c.raw.Write(appendFrame(nil, opClose, payload))
	}
	c.wmu.Unlock()
	if cerr := c.raw.Close(); err == nil {
		err = cerr
	}
	return err
}
