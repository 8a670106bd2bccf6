// Package e2e holds the end-to-end tests of the library against a daemon:
// a Remote (and the Pools and migrations built on Remotes) talking to our
// daemon.Server started in the test process, to the agent-backend binary,
// to the TypeScript reference daemon, or to OpenSSH. They use the public
// API of the library and of the daemon package, as a user would, plus
// three internal helpers: internal/testenv's rule for missing tools, a
// plain SFTP session (internal/wsnet, sftpjail) that benchmarks compare a
// Remote with, and internal/migrate's CopiedHook, which interrupts a
// migration at a chosen file. The package has no code besides tests.
package e2e
