package agentbe

import (
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/agentbe/agent-backend/internal/safety"
)

// SafetyPolicy adjusts the dangerous-command check. The zero value applies
// all the built-in rules of the project's safety list and its default
// allowlist ("gcloud rsync").
//
// The built-in rules form two classes. The dangerous class
// (DANGEROUS_OPERATION: destructive rm, privilege escalation, pipes to a
// shell, network tools, command substitution, writes to /etc, …) applies
// whenever the check does. The workspace-escape class (UNSAFE_COMMAND:
// cd, pushd, popd, export PATH/HOME/PWD=, ~/, $HOME, ${HOME}, "..") only
// keeps a command from wandering out of the workspace, so it applies only
// where nothing else keeps it in: not when Confined is set. A Local backend
// sets Confined itself from its isolation mode:
//
//   - IsolationBwrap: Confined. The kernel confines the command to the
//     workspace whatever it does, so cd, $HOME and ".." are harmless (and
//     "cd src && make" must work).
//   - IsolationSoftware: not confined; the escape class applies, and so
//     does the absolute-path heuristic of software mode.
//   - IsolationNone: not confined; the escape class applies (unless
//     LocalConfig.AllowDangerous turns the whole check off).
//
// Caller patterns are Go regular expressions, matched case-insensitively
// against the pre-processed command: heredoc bodies removed, line
// continuations joined, lower-cased. They apply in every mode.
type SafetyPolicy struct {
	// Blocked adds patterns that mark a command dangerous
	// (DANGEROUS_OPERATION).
	Blocked []string
	// Allowed adds patterns whose matches are exempt from the check. Like the
	// built-in allowlist they are applied first; the text they match is
	// blanked out and the rest of the command is still checked, so an
	// allowed fragment cannot carry a dangerous remainder through
	// ("gcloud rsync a b && sudo x" is still blocked).
	Allowed []string
	// Confined says that commands run under kernel confinement to the
	// workspace, so the workspace-escape class is not applied. A Local
	// backend decides it from its isolation mode (whatever is set here);
	// set it for CheckCommand and NewSafetyChecker used on their own.
	Confined bool
}

// SafetyChecker is a compiled SafetyPolicy. It is safe for concurrent use.
// Backends build one at construction; CheckCommand builds (and caches) one
// per distinct policy.
type SafetyChecker struct {
	allowed  []*regexp.Regexp
	blocked  []*regexp.Regexp
	confined bool // skip the workspace-escape class
}

// NewSafetyChecker compiles p. An invalid pattern yields an *Error of code
// INVALID_CONFIGURATION wrapping ErrInvalidConfig.
func NewSafetyChecker(p SafetyPolicy) (*SafetyChecker, error) {
	c := &SafetyChecker{confined: p.Confined}
	for _, list := range []struct {
		src []string
		dst *[]*regexp.Regexp
	}{{p.Allowed, &c.allowed}, {p.Blocked, &c.blocked}} {
		for _, s := range list.src {
			re, err := regexp.Compile("(?i)" + s)
			if err != nil {
				return nil, &Error{Code: CodeInvalidConfiguration, Op: "config",
					Reason: "invalid safety pattern " + strings.TrimPrefix(err.Error(), "error parsing regexp: "),
					Err:    ErrInvalidConfig}
			}
			*list.dst = append(*list.dst, re)
		}
	}
	return c, nil
}

// defaultChecker applies the built-in rules only; confinedChecker the
// dangerous class of them.
var (
	defaultChecker  = &SafetyChecker{}
	confinedChecker = &SafetyChecker{confined: true}
)

// policyCache keeps the compiled form of the policies CheckCommand has seen,
// so extra patterns are compiled once, not on every call. It is bounded:
// past maxCachedPolicies distinct policies, further ones are compiled per
// call (callers with many policies should hold a SafetyChecker).
var (
	policyCache   sync.Map // policyKey -> *SafetyChecker
	policyCacheMu sync.Mutex
	policyCacheN  int
)

const maxCachedPolicies = 64

// policyKey encodes p unambiguously (quoted patterns, lists apart).
func policyKey(p SafetyPolicy) string {
	var b strings.Builder
	for _, s := range p.Allowed {
		b.WriteString(strconv.Quote(s))
	}
	b.WriteByte('|')
	for _, s := range p.Blocked {
		b.WriteString(strconv.Quote(s))
	}
	if p.Confined {
		b.WriteString("|confined")
	}
	return b.String()
}

// CheckCommand reports whether command may run under p. It returns nil, or
// an *Error of code EMPTY_COMMAND (wrapping ErrEmptyCommand) for a blank
// command, DANGEROUS_OPERATION or UNSAFE_COMMAND (the workspace-escape
// class, not checked when p.Confined is set), both wrapping ErrDangerous and
// carrying the command, a Reason and Guidance, or INVALID_CONFIGURATION
// when p holds an invalid pattern.
//
// The check is a footgun filter in front of the real boundary (the bwrap
// sandbox and the os.Root file jail), not the boundary itself. It is a pure
// function of its arguments.
//
// Pre-processing, in this order: heredoc bodies are removed (they are data;
// the line holding "<<" is still checked), backslash-newline continuations
// are joined, the text is lower-cased; then allowed patterns blank out what
// they match, and every dangerous and workspace-escape pattern runs on the
// rest. Deliberate deviations make the filter stricter than the reference
// where a heredoc body is not data: a body is kept (and checked) when its
// delimiter is unquoted and it holds "$(" or "`" (the shell runs those
// substitutions), when the line holding "<<" runs a shell ("bash <<EOF":
// the body is the script), and whenever the command does not parse cleanly
// (unbalanced quotes, a heredoc without its terminator, constructs such as
// backticks or "$[" that the heredoc scanner does not model).
//
// Besides the patterns of the safety list, a few added ones close its
// obvious gaps (rm -fr, ln -sf, tee /etc/…, "| /bin/sh", a bare ".."
// argument, a redirect onto a block device); docs/safety.md lists them all.
func CheckCommand(command string, p SafetyPolicy) error {
	if len(p.Allowed) == 0 && len(p.Blocked) == 0 {
		if p.Confined {
			return confinedChecker.Check(command)
		}
		return defaultChecker.Check(command)
	}
	key := policyKey(p)
	if c, ok := policyCache.Load(key); ok {
		return c.(*SafetyChecker).Check(command)
	}
	c, err := NewSafetyChecker(p)
	if err != nil {
		return err
	}
	policyCacheMu.Lock()
	if policyCacheN < maxCachedPolicies {
		if _, loaded := policyCache.LoadOrStore(key, c); !loaded {
			policyCacheN++
		}
	}
	policyCacheMu.Unlock()
	return c.Check(command)
}

// Check applies the built-in rules and the checker's policy to command; see
// CheckCommand.
func (c *SafetyChecker) Check(command string) error {
	if strings.TrimSpace(command) == "" {
		return &Error{Code: CodeEmptyCommand, Op: "exec", Err: ErrEmptyCommand}
	}
	text := safety.MaskAllowed(safety.Preprocess(command), c.allowed)
	if r, frag := safety.Match(text, c.confined); r != nil {
		return &Error{Code: ErrorCode(r.Code()), Op: "exec", Command: command,
			Reason: r.Class() + fragNote(frag), Guidance: r.Guidance(), Err: ErrDangerous}
	}
	for _, re := range c.blocked {
		if loc := re.FindStringIndex(text); loc != nil {
			frag := text[loc[0]:loc[1]]
			return &Error{Code: CodeDangerousOperation, Op: "exec", Command: command,
				Reason:   "matches blocked pattern " + quoteFrag(re.String()[len("(?i)"):]) + fragNote(frag),
				Guidance: "This command is blocked by the backend's safety policy",
				Err:      ErrDangerous}
		}
	}
	return nil
}

func quoteFrag(s string) string {
	const max = 80
	if len(s) > max {
		s = s[:max] + "…"
	}
	return `"` + s + `"`
}

func fragNote(frag string) string {
	if frag == "" {
		return ""
	}
	return " (" + quoteFrag(strings.TrimSpace(frag)) + ")"
}
