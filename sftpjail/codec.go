package sftpjail

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
)

// ErrBadPacket reports a malformed packet: too short, too long, or with a
// field that runs past its end. Either side ends the session on it.
var ErrBadPacket = errors.New("sftp: malformed packet")

// ErrPacketTooLarge reports a packet longer than the protocol limit.
var ErrPacketTooLarge = fmt.Errorf("%w: packet too large", ErrBadPacket)

// Packet buffers come from two pools: small ones for requests and
// replies that fit 36 KiB, large ones (exactly one packet at the limit) for
// the big READ and WRITE payloads, so a small reply never holds a large
// buffer and a large packet never allocates once the pool is warm. Only
// buffers up to maxPacket+4 bytes are ever allocated, whatever the peer
// announces.
const (
	smallBuf = 36 * 1024
	largeBuf = maxPacket + 4
)

var (
	smallPool = sync.Pool{New: func() any { b := make([]byte, 0, smallBuf); return &b }}
	largePool = sync.Pool{New: func() any { b := make([]byte, 0, largeBuf); return &b }}
)

func getBuf() *[]byte { return smallPool.Get().(*[]byte) }

// growBuf makes *bp able to hold n bytes, trading a small buffer for a
// large one.
func growBuf(bp *[]byte, n int) {
	if cap(*bp) >= n {
		return
	}
	lb := largePool.Get().(*[]byte)
	*bp, *lb = *lb, (*bp)[:0]
	smallPool.Put(lb)
}

func putBuf(b *[]byte) {
	*b = (*b)[:0]
	switch cap(*b) {
	case smallBuf:
		smallPool.Put(b)
	case largeBuf:
		largePool.Put(b)
	}
}

// readPacket reads one length-prefixed packet into *buf (grown as needed up
// to the limit) and returns its body: type byte first. A length below 5
// (type plus id or version) or above maxPacket is ErrBadPacket.
func readPacket(r io.Reader, buf *[]byte) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > maxPacket {
		return nil, ErrPacketTooLarge
	}
	if n < 5 {
		return nil, fmt.Errorf("%w: length %d", ErrBadPacket, n)
	}
	growBuf(buf, int(n))
	b := (*buf)[:n]
	if _, err := io.ReadFull(r, b); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return b, nil
}

// decoder reads the fields of one packet body. The first read past the end
// sets bad; later reads return zero values, so callers check ok() once.
type decoder struct {
	b   []byte
	bad bool
}

func (d *decoder) ok() bool { return !d.bad }

func (d *decoder) fail() { d.bad = true; d.b = nil }

func (d *decoder) u8() byte {
	if len(d.b) < 1 {
		d.fail()
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *decoder) u32() uint32 {
	if len(d.b) < 4 {
		d.fail()
		return 0
	}
	v := binary.BigEndian.Uint32(d.b)
	d.b = d.b[4:]
	return v
}

func (d *decoder) u64() uint64 {
	if len(d.b) < 8 {
		d.fail()
		return 0
	}
	v := binary.BigEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

// bytes returns a string field aliasing the packet buffer.
func (d *decoder) bytes() []byte {
	n := d.u32()
	if d.bad || uint64(n) > uint64(len(d.b)) {
		d.fail()
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) str() string { return string(d.bytes()) }

// attrs decodes an ATTRS structure.
func (d *decoder) attrs() Attrs {
	var a Attrs
	a.Flags = d.u32()
	if a.Flags&attrSize != 0 {
		a.Size = d.u64()
	}
	if a.Flags&attrUIDGID != 0 {
		a.UID = d.u32()
		a.GID = d.u32()
	}
	if a.Flags&attrPermissions != 0 {
		a.Mode = d.u32()
	}
	if a.Flags&attrACModTime != 0 {
		a.Atime = d.u32()
		a.Mtime = d.u32()
	}
	if a.Flags&attrExtended != 0 {
		count := d.u32()
		// Each pair takes at least 8 bytes: a count larger than what is
		// left is malformed, so no loop runs longer than the packet.
		if uint64(count)*8 > uint64(len(d.b)) {
			d.fail()
			return a
		}
		for i := uint32(0); i < count && d.ok(); i++ {
			d.bytes()
			d.bytes()
		}
	}
	return a
}

// Encoding helpers append to a buffer that starts with a 4-byte length
// placeholder; finish fills it in.

func startPacket(b []byte, typ byte) []byte {
	return append(b[:0], 0, 0, 0, 0, typ)
}

func finishPacket(b []byte) []byte {
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

func appendU32(b []byte, v uint32) []byte { return binary.BigEndian.AppendUint32(b, v) }

func appendU64(b []byte, v uint64) []byte { return binary.BigEndian.AppendUint64(b, v) }

func appendString(b []byte, s string) []byte {
	b = appendU32(b, uint32(len(s)))
	return append(b, s...)
}

func appendBytes(b []byte, s []byte) []byte {
	b = appendU32(b, uint32(len(s)))
	return append(b, s...)
}

func appendAttrs(b []byte, a *Attrs) []byte {
	flags := a.Flags &^ attrExtended
	b = appendU32(b, flags)
	if flags&attrSize != 0 {
		b = appendU64(b, a.Size)
	}
	if flags&attrUIDGID != 0 {
		b = appendU32(b, a.UID)
		b = appendU32(b, a.GID)
	}
	if flags&attrPermissions != 0 {
		b = appendU32(b, a.Mode)
	}
	if flags&attrACModTime != 0 {
		b = appendU32(b, a.Atime)
		b = appendU32(b, a.Mtime)
	}
	return b
}
