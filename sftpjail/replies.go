package sftpjail

// Reply encoders. Each returns a pooled buffer holding one whole packet.

func statusPacket(id, code uint32, msg string) *[]byte {
	bp := getBuf()
	b := startPacket(*bp, fxpStatus)
	b = appendU32(b, id)
	b = appendU32(b, code)
	b = appendString(b, msg)
	b = appendString(b, "en")
	*bp = finishPacket(b)
	return bp
}

func okPacket(id uint32) *[]byte { return statusPacket(id, statusOK, "Success") }

// errPacket reports err for an operation on the path the client gave;
// the message never carries a host path.
func errPacket(id uint32, op, name string, err error) *[]byte {
	return statusPacket(id, statusCode(err), op+" "+name+": "+reason(err))
}

func handlePacket(id uint32, h string) *[]byte {
	bp := getBuf()
	b := startPacket(*bp, fxpHandle)
	b = appendU32(b, id)
	b = appendString(b, h)
	*bp = finishPacket(b)
	return bp
}

func attrsPacket(id uint32, a *Attrs) *[]byte {
	bp := getBuf()
	b := startPacket(*bp, fxpAttrs)
	b = appendU32(b, id)
	b = appendAttrs(b, a)
	*bp = finishPacket(b)
	return bp
}

// nameEntry is one entry of a NAME reply.
type nameEntry struct {
	name, long string
	attrs      Attrs
}

func namePacket(id uint32, entries []nameEntry) *[]byte {
	bp := getBuf()
	b := startPacket(*bp, fxpName)
	b = appendU32(b, id)
	b = appendU32(b, uint32(len(entries)))
	for i := range entries {
		b = appendString(b, entries[i].name)
		b = appendString(b, entries[i].long)
		b = appendAttrs(b, &entries[i].attrs)
	}
	*bp = finishPacket(b)
	return bp
}
