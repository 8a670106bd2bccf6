package agentbe

import "strings"

// SafetyPolicy adjusts the dangerous-command check. The zero value applies
// the built-in rules. (Placeholder: completed by the safety work, issue 3.)
type SafetyPolicy struct {
	// Blocked adds regular expressions that mark a command dangerous.
	Blocked []string
	// Allowed adds regular expressions that, matched first, let a command pass.
	Allowed []string
}

// CheckCommand reports whether command may run under p: nil, or an *Error
// wrapping ErrEmptyCommand or ErrDangerous.
func CheckCommand(command string, p SafetyPolicy) error {
	if strings.TrimSpace(command) == "" {
		return &Error{Code: CodeEmptyCommand, Op: "exec", Err: ErrEmptyCommand}
	}
	return nil
}
