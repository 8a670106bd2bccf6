// Package safety is the matching engine of the dangerous-command check
// (agentbe.CheckCommand, agentbe.SafetyChecker, docs/safety.md): the
// pre-processing of a command (heredoc bodies removed where they are data,
// line continuations joined, lower case), the default allowlist, and the
// built-in rules with their prefilters and hand-written matchers. The root
// package keeps the policy (caller patterns, confinement) and the errors.
package safety

import (
	"regexp"
	"strings"
)

// Code is the error code a rule's match carries; the values are
// agentbe.ErrorCode's.
type Code string

// The two classes of rules.
const (
	// CodeDangerous: the dangerous class, applied whenever the check is.
	CodeDangerous Code = "DANGEROUS_OPERATION"
	// CodeUnsafe: the workspace-escape class, not applied to confined
	// commands.
	CodeUnsafe Code = "UNSAFE_COMMAND"
)

// Match returns the first built-in rule that matches text (a command as
// Preprocess and MaskAllowed left it) and the fragment it matched, or nil.
// With confined set, the workspace-escape class is skipped.
func Match(text string, confined bool) (*Rule, string) {
	present := presentWords(text)
	for i := range Rules {
		r := &Rules[i]
		if confined && r.code == CodeUnsafe {
			continue
		}
		if frag, ok := r.match(text, present); ok {
			return r, frag
		}
	}
	return nil, ""
}

// Preprocess applies the pre-processing steps of the check: heredoc bodies
// removed (StripHeredocs), backslash-newline continuations joined, lower case.
func Preprocess(command string) string {
	text := StripHeredocs(command)
	if strings.Contains(text, "\\\n") {
		text = strings.ReplaceAll(text, "\\\n", "")
	}
	return strings.ToLower(text)
}

// MaskAllowed blanks every match of the default allowlist and of extra.
func MaskAllowed(text string, extra []*regexp.Regexp) string {
	if strings.Contains(text, "gcloud") {
		text = reGcloudRsync.ReplaceAllString(text, " ")
	}
	for _, re := range extra {
		text = re.ReplaceAllString(text, " ")
	}
	return text
}

// reGcloudRsync is the default allowlist: gcloud's rsync subcommands are
// not the rsync binary.
var reGcloudRsync = regexp.MustCompile(`\bgcloud\s+(?:(?:alpha|beta)\s+)?(?:storage\s+)?rsync\b`)
