//go:build !linux

package agentbe

// openPin is 0 where the system has no O_PATH: replaced files are then
// released by the rename itself.
const openPin = 0
