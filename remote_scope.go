package agentbe

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"golang.org/x/crypto/ssh"

	"github.com/agentbe/agent-backend/internal/wspath"
	"github.com/agentbe/agent-backend/sftpjail"
)

// How a Remote scope tells our daemon its scope: every exec channel, and
// an SFTP session of the scope's own, carry the env request AGENTBE_SCOPE
// (the scope's RootDir, a path under the daemon's root) before the exec or
// subsystem request. The daemon then runs the command with only the scope
// mounted at the workspace path and jails the SFTP session at the scope,
// so a link inside the scope cannot lead to a sibling. Other SSH servers
// (OpenSSH, the reference daemon) get none of this: they would refuse or
// ignore the variable, and there the scope is the client's alone.

// scopeEnvName is the env request naming a channel's scope.
const scopeEnvName = "AGENTBE_SCOPE"

// maxScopeSessions bounds the SFTP sessions of scopes a link has open at
// once, and maxIdleScopeSessions those it keeps open while no operation
// uses them: the daemon allows a connection a few channels only (16 by
// default), which commands need as well.
const (
	maxScopeSessions     = 8
	maxIdleScopeSessions = 4
)

// scopeSession is the SFTP session of one scope on a link.
type scopeSession struct {
	ready     chan struct{} // closed once c (or err) is set
	c         *sftpjail.Client
	presented string // the scope's RootDir as this session presents it
	err       error
	users     int    // operations, readers and writers using it
	used      uint64 // when it was last released (scopeTick)
}

// sendScope sends AGENTBE_SCOPE=dir on s without asking for a reply (the
// daemon refuses the request that follows a refused scope, so no round
// trip is spent on it).
func sendScope(s *ssh.Session, dir string) error {
	_, err := s.SendRequest("env", false, ssh.Marshal(struct{ Name, Value string }{scopeEnvName, dir}))
	return err
}

// sftpFor returns the SFTP session r's file operations use on l, the
// path under which that session presents r's RootDir, and the function
// that releases the session once the operation (or the reader or writer
// it returned) is done. A scope on our daemon gets a session of its own,
// jailed at the scope by the daemon; everything else shares the link's.
func (r *Remote) sftpFor(ctx context.Context, l *remoteLink) (*sftpjail.Client, string, func(), error) {
	if r.rel == "." || !l.ours {
		return l.sftp, wspath.Join(l.presentedRoot, r.rel), func() {}, nil
	}
	return l.scopeSFTP(ctx, r.rootDir)
}

// scopeSFTP returns the link's session for the scope whose RootDir is dir,
// opening it on first use. At most maxScopeSessions are open at once: a
// new one first closes an idle one, or waits for one to become idle.
func (l *remoteLink) scopeSFTP(ctx context.Context, dir string) (*sftpjail.Client, string, func(), error) {
	e, err := l.acquireScope(ctx, dir)
	if err != nil {
		return nil, "", nil, err
	}
	var once sync.Once
	release := func() {
		once.Do(func() {
			l.scopeMu.Lock()
			defer l.scopeMu.Unlock()
			e.users--
			l.scopeTick++
			e.used = l.scopeTick
			if e.users == 0 {
				l.trimIdle(maxIdleScopeSessions)
				l.freed()
			}
		})
	}
	return e.c, e.presented, release, nil
}

// acquireScope returns dir's open session with one more user.
func (l *remoteLink) acquireScope(ctx context.Context, dir string) (*scopeSession, error) {
	for {
		select {
		case <-l.lost:
			return nil, sftpjail.ErrConnClosed
		default:
		}
		l.scopeMu.Lock()
		if l.scopes == nil {
			l.scopes = map[string]*scopeSession{}
		}
		e := l.scopes[dir]
		switch {
		case e != nil && e.c != nil:
			e.users++
			l.scopeMu.Unlock()
			return e, nil
		case e != nil:
			// Being opened by another operation: wait for it, then look
			// again (it may have failed, or been closed meanwhile).
			l.scopeMu.Unlock()
			select {
			case <-e.ready:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if e.err != nil {
				return nil, e.err
			}
			continue
		case len(l.scopes) < maxScopeSessions || l.evictOne():
			// Ours to open; counted as used already, so that it is not
			// closed as idle before this operation runs.
			e = &scopeSession{ready: make(chan struct{}), users: 1}
			l.scopes[dir] = e
			l.scopeMu.Unlock()
			l.openScope(ctx, dir, e)
			if e.err != nil {
				return nil, e.err
			}
			return e, nil
		}
		if l.scopeFreed == nil {
			l.scopeFreed = make(chan struct{})
		}
		freed := l.scopeFreed
		l.scopeMu.Unlock()
		select {
		case <-freed:
		case <-l.lost:
			return nil, sftpjail.ErrConnClosed
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// openScope opens e, the session of dir, and makes it ready; a failure is
// e's error and forgets e, so that the next operation tries again.
func (l *remoteLink) openScope(ctx context.Context, dir string, e *scopeSession) {
	defer close(e.ready)
	c, err := openSFTPIn(ctx, l.ssh, dir, func(error) { l.dropScope(dir, e) })
	presented := ""
	if err == nil {
		if presented, err = c.RealPath(ctx, dir); err != nil {
			c.Close()
		}
	}
	l.scopeMu.Lock()
	defer l.scopeMu.Unlock()
	switch {
	case err != nil:
		e.err = fmt.Errorf("SFTP session of the scope %s: %w", dir, err)
	case l.scopes[dir] != e:
		// The link was torn down (or the stream ended) meanwhile.
		c.Close()
		e.err = sftpjail.ErrConnClosed
	default:
		e.c, e.presented = c, presented
		return
	}
	if l.scopes[dir] == e {
		delete(l.scopes, dir)
		l.freed()
	}
}

// dropScope forgets e (if it is still dir's session).
func (l *remoteLink) dropScope(dir string, e *scopeSession) {
	l.scopeMu.Lock()
	if l.scopes[dir] == e {
		delete(l.scopes, dir)
		l.freed()
	}
	l.scopeMu.Unlock()
}

// oldestIdle returns the least recently used idle session and how many
// are idle; l.scopeMu is held.
func (l *remoteLink) oldestIdle() (dir string, oldest *scopeSession, idle int) {
	for d, e := range l.scopes {
		if e.users > 0 || e.c == nil {
			continue
		}
		idle++
		if oldest == nil || e.used < oldest.used {
			dir, oldest = d, e
		}
	}
	return dir, oldest, idle
}

// evictOne closes the least recently used idle session, if any; l.scopeMu
// is held.
func (l *remoteLink) evictOne() bool {
	dir, e, _ := l.oldestIdle()
	if e == nil {
		return false
	}
	delete(l.scopes, dir)
	go e.c.Close()
	return true
}

// trimIdle closes the least recently used idle sessions beyond keep;
// l.scopeMu is held.
func (l *remoteLink) trimIdle(keep int) {
	for {
		if _, _, idle := l.oldestIdle(); idle <= keep {
			return
		}
		l.evictOne()
	}
}

// freed wakes those waiting for a session to open (one became idle or was
// forgotten); l.scopeMu is held.
func (l *remoteLink) freed() {
	if l.scopeFreed != nil {
		close(l.scopeFreed)
		l.scopeFreed = nil
	}
}

// closeScopes closes every scope session of the link (its teardown).
func (l *remoteLink) closeScopes() {
	l.scopeMu.Lock()
	list := make([]*scopeSession, 0, len(l.scopes))
	for _, e := range l.scopes {
		list = append(list, e)
	}
	l.scopes = nil
	l.scopeMu.Unlock()
	for _, e := range list {
		if e.c != nil {
			e.c.Close()
		}
	}
}

// errScopeRefused is the error of a command our daemon refused to run
// because the scope it was sent with lies outside what the connection may
// reach (a tenant's token, X-Scope-Path in RemoteConfig.Headers).
var errScopeRefused = errors.New("the daemon refused the scope: it lies outside what this connection may reach")
