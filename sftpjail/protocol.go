package sftpjail

// Packet types of SFTP version 3.
const (
	fxpInit          = 1
	fxpVersion       = 2
	fxpOpen          = 3
	fxpClose         = 4
	fxpRead          = 5
	fxpWrite         = 6
	fxpLstat         = 7
	fxpFstat         = 8
	fxpSetstat       = 9
	fxpFsetstat      = 10
	fxpOpendir       = 11
	fxpReaddir       = 12
	fxpRemove        = 13
	fxpMkdir         = 14
	fxpRmdir         = 15
	fxpRealpath      = 16
	fxpStat          = 17
	fxpRename        = 18
	fxpReadlink      = 19
	fxpSymlink       = 20
	fxpStatus        = 101
	fxpHandle        = 102
	fxpData          = 103
	fxpName          = 104
	fxpAttrs         = 105
	fxpExtended      = 200
	fxpExtendedReply = 201
)

// protocolVersion is the only version spoken.
const protocolVersion = 3

// Status codes of SSH_FXP_STATUS.
const (
	statusOK               = 0
	statusEOF              = 1
	statusNoSuchFile       = 2
	statusPermissionDenied = 3
	statusFailure          = 4
	statusBadMessage       = 5
	statusNoConnection     = 6
	statusConnectionLost   = 7
	statusOpUnsupported    = 8
)

// Open flags (pflags) of SSH_FXP_OPEN.
const (
	flagRead   = 0x01
	flagWrite  = 0x02
	flagAppend = 0x04
	flagCreat  = 0x08
	flagTrunc  = 0x10
	flagExcl   = 0x20
)

// Attribute flags.
const (
	attrSize        = 0x00000001
	attrUIDGID      = 0x00000002
	attrPermissions = 0x00000004
	attrACModTime   = 0x00000008
	attrExtended    = 0x80000000
)

// Extensions (OpenSSH's) that both sides understand.
const (
	extPosixRename = "posix-rename@openssh.com"
	extHardlink    = "hardlink@openssh.com"
	extFsync       = "fsync@openssh.com"
	extLimits      = "limits@openssh.com"
)

// Size limits. maxPacket bounds every packet either side accepts (OpenSSH's
// SFTP_MAX_MSG_LENGTH plus room for the header); maxData is the largest READ
// or WRITE payload, advertised through limits@openssh.com.
const (
	maxPacket = 256*1024 + 1024
	maxData   = 256*1024 - 1024
)
