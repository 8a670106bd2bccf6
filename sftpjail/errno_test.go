package sftpjail

import (
	"fmt"
	"syscall"

	"github.com/agentbe/agent-backend/internal/wspath"
)

var (
	errnoENOENT      error = syscall.ENOENT
	errnoEACCES      error = syscall.EACCES
	errnoEISDIR      error = syscall.EISDIR
	errEscapeWrapped       = fmt.Errorf("resolve: %w", wspath.ErrEscape)
)
