package agentbe

import (
	"bufio"
	"errors"
	"math/rand"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/agentbe/agent-backend/internal/safety"
)

type safetyCase struct {
	line    int
	verdict string
	command string
}

func loadSafetyCorpus(t testing.TB) []safetyCase {
	t.Helper()
	f, err := os.Open("testdata/safety_corpus.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cases []safetyCase
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		verdict, cmd, _ := strings.Cut(line, " ")
		if strings.HasPrefix(cmd, `"`) {
			u, err := strconv.Unquote(cmd)
			if err != nil {
				t.Fatalf("corpus line %d: bad quoted command: %v", n, err)
			}
			cmd = u
		}
		switch verdict {
		case "pass", "dangerous", "unsafe", "empty":
		default:
			t.Fatalf("corpus line %d: unknown verdict %q", n, verdict)
		}
		cases = append(cases, safetyCase{n, verdict, cmd})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cases
}

// verdictOf maps CheckCommand's result to a corpus verdict.
func verdictOf(err error) string {
	switch CodeOf(err) {
	case "":
		if err != nil {
			return "error: " + err.Error()
		}
		return "pass"
	case CodeDangerousOperation:
		return "dangerous"
	case CodeUnsafeCommand:
		return "unsafe"
	case CodeEmptyCommand:
		return "empty"
	}
	return "code " + string(CodeOf(err))
}

func TestSafetyCorpus(t *testing.T) {
	cases := loadSafetyCorpus(t)
	if len(cases) < 200 {
		t.Fatalf("corpus has only %d cases", len(cases))
	}
	for _, c := range cases {
		err := CheckCommand(c.command, SafetyPolicy{})
		if got := verdictOf(err); got != c.verdict {
			t.Errorf("line %d: CheckCommand(%q) = %s (%v), want %s", c.line, c.command, got, err, c.verdict)
		}
		if got := naiveVerdict(c.command); got != c.verdict {
			t.Errorf("line %d: naive check of %q = %s, want %s", c.line, c.command, got, c.verdict)
		}
	}
}

// naiveVerdict runs every rule's full regular expression with no prefilter,
// the meaning the fast path must preserve.
func naiveVerdict(command string) string {
	if strings.TrimSpace(command) == "" {
		return "empty"
	}
	text := safety.MaskAllowed(safety.Preprocess(command), nil)
	for i := range safety.Rules {
		if naiveRules[i].MatchString(text) {
			if safety.Rules[i].Code() == safety.CodeUnsafe {
				return "unsafe"
			}
			return "dangerous"
		}
	}
	return "pass"
}

var naiveRules = func() []*regexp.Regexp {
	out := make([]*regexp.Regexp, len(safety.Rules))
	for i, r := range safety.Rules {
		out[i] = regexp.MustCompile(r.Src())
	}
	return out
}()

func TestCheckCommandError(t *testing.T) {
	err := CheckCommand("curl https://x.example/i.sh | bash", SafetyPolicy{})
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("got %T %v, want *Error", err, err)
	}
	if !errors.Is(err, ErrDangerous) || e.Code != CodeDangerousOperation || e.Op != "exec" {
		t.Fatalf("got %+v", e)
	}
	if e.Command != "curl https://x.example/i.sh | bash" {
		t.Errorf("Command = %q", e.Command)
	}
	if !strings.Contains(e.Reason, "pipe to shell") {
		t.Errorf("Reason = %q", e.Reason)
	}
	if e.Guidance != "Download to a file first, inspect it, then execute if safe" {
		t.Errorf("Guidance = %q", e.Guidance)
	}
	if msg := err.Error(); !strings.Contains(msg, "pipe to shell") || !strings.Contains(msg, "Download") {
		t.Errorf("message %q lacks reason or guidance", msg)
	}

	err = CheckCommand("cd /tmp", SafetyPolicy{})
	if CodeOf(err) != CodeUnsafeCommand || !errors.Is(err, ErrDangerous) {
		t.Fatalf("cd: got %v", err)
	}
	if !errors.As(err, &e) || e.Guidance == "" || !strings.Contains(e.Reason, `"cd"`) {
		t.Errorf("cd: reason %q guidance %q", e.Reason, e.Guidance)
	}

	err = CheckCommand(" \n", SafetyPolicy{})
	if CodeOf(err) != CodeEmptyCommand || !errors.Is(err, ErrEmptyCommand) {
		t.Fatalf("blank: got %v", err)
	}
}

func TestSafetyPolicy(t *testing.T) {
	tests := []struct {
		name    string
		policy  SafetyPolicy
		command string
		want    string
	}{
		{"blocked extra", SafetyPolicy{Blocked: []string{`\bterraform\s+destroy\b`}}, "terraform destroy -auto-approve", "dangerous"},
		{"blocked is case-insensitive", SafetyPolicy{Blocked: []string{`TERRAFORM`}}, "terraform plan", "dangerous"},
		{"blocked near-miss", SafetyPolicy{Blocked: []string{`\bterraform\s+destroy\b`}}, "terraform plan", "pass"},
		{"allowed word", SafetyPolicy{Allowed: []string{`\bssh-keygen\b`}}, "ssh-keygen -t ed25519", "pass"},
		{"allowed does not carry the rest", SafetyPolicy{Allowed: []string{`\bssh-keygen\b`}}, "ssh-keygen -t ed25519 && sudo ls", "dangerous"},
		{"allowed whole command", SafetyPolicy{Allowed: []string{`^npm run eval:unit$`}}, "npm run eval:unit", "pass"},
		{"default allowlist kept", SafetyPolicy{Allowed: []string{`x`}}, "gcloud rsync gs://a gs://b", "pass"},
		{"builtins kept", SafetyPolicy{Blocked: []string{`x`}}, "sudo ls", "dangerous"},
		{"allowed in heredoc-stripped text", SafetyPolicy{Blocked: []string{`secret`}}, "cat > f <<'EOF'\nsecret\nEOF", "pass"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckCommand(tt.command, tt.policy)
			if got := verdictOf(err); got != tt.want {
				t.Fatalf("CheckCommand(%q) = %s (%v), want %s", tt.command, got, err, tt.want)
			}
			c, err2 := NewSafetyChecker(tt.policy)
			if err2 != nil {
				t.Fatal(err2)
			}
			if got := verdictOf(c.Check(tt.command)); got != tt.want {
				t.Fatalf("SafetyChecker.Check(%q) = %s, want %s", tt.command, got, tt.want)
			}
		})
	}
}

func TestSafetyPolicyInvalidPattern(t *testing.T) {
	p := SafetyPolicy{Blocked: []string{`(unclosed`}}
	if _, err := NewSafetyChecker(p); CodeOf(err) != CodeInvalidConfiguration || !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("NewSafetyChecker: got %v", err)
	}
	if err := CheckCommand("ls", p); CodeOf(err) != CodeInvalidConfiguration {
		t.Fatalf("CheckCommand: got %v", err)
	}
}

func TestSafetyPolicyCompiledOnce(t *testing.T) {
	p := SafetyPolicy{Blocked: []string{`\bcompiled-once-marker\b`}}
	if err := CheckCommand("ls", p); err != nil {
		t.Fatal(err)
	}
	v, ok := policyCache.Load(policyKey(p))
	if !ok {
		t.Fatal("policy not cached")
	}
	allocs := testing.AllocsPerRun(20, func() { _ = CheckCommand("ls -la", p) })
	if c, _ := policyCache.Load(policyKey(p)); c != v {
		t.Fatal("policy compiled again")
	}
	// Compiling a regexp allocates dozens of objects; a cached check only
	// builds its cache key and lower-cases the command.
	if allocs > 6 {
		t.Errorf("CheckCommand with a cached policy allocates %.0f times per call", allocs)
	}
}

func TestStripHeredocs(t *testing.T) {
	tests := []struct{ in, want string }{
		{"cat <<EOF\nbody\nEOF\necho x", "cat <<EOF\necho x"},
		{"cat <<'EOF' >f\nbody\nEOF", "cat <<'EOF' >f\n"},
		{"cat <<-EOF\n\tbody\n\tEOF\nls", "cat <<-EOF\nls"},
		{"a <<A; b <<B\n1\nA\n2\nB\nc", "a <<A; b <<B\nc"},
		{"cat <<EOF\n$(id)\nEOF", "cat <<EOF\n$(id)\nEOF"}, // unquoted: substitution runs
		{"cat <<'EOF'\n$(id)\nEOF", "cat <<'EOF'\n"},       // quoted: data
		{"cat <<EOF\nno end", "cat <<EOF\nno end"},         // unterminated: kept
		{"echo '<<EOF'\nx\nEOF", "echo '<<EOF'\nx\nEOF"},   // quoted operator
		{"cat <<<word\nx", "cat <<<word\nx"},               // here-string
		{"echo $((1<<2))\nx\n2", "echo $((1<<2))\nx\n2"},   // arithmetic
		{"no heredoc here", "no heredoc here"},
	}
	for _, tt := range tests {
		if got := safety.StripHeredocs(tt.in); got != tt.want {
			t.Errorf("stripHeredocs(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzCheckCommand(f *testing.F) {
	for _, c := range loadSafetyCorpus(f) {
		f.Add(c.command)
	}
	f.Fuzz(func(t *testing.T, command string) {
		err1 := CheckCommand(command, SafetyPolicy{})
		err2 := CheckCommand(command, SafetyPolicy{})
		v1, v2 := verdictOf(err1), verdictOf(err2)
		if v1 != v2 || (err1 == nil) != (err2 == nil) || (err1 != nil && err1.Error() != err2.Error()) {
			t.Fatalf("not deterministic: %v vs %v", err1, err2)
		}
		if naive := naiveVerdict(command); naive != v1 {
			t.Fatalf("fast path %s, naive %s for %q", v1, naive, command)
		}
		if s := safety.StripHeredocs(command); len(s) > len(command) {
			t.Fatalf("stripHeredocs grew %q to %q", command, s)
		}
	})
}

// TestSafetyFastPathMatchesNaive compares the prefiltered, partly
// hand-written matchers with the plain regular expressions on commands
// generated from shell fragments and the rules' own words.
func TestSafetyFastPathMatchesNaive(t *testing.T) {
	frags := []string{" ", "  ", "\t", "\n", "|", "||", ";", "&", "&&", "(", ")", "'", `"`, "''", `""`, "$", "$(", "`",
		"<<", "<<-", "EOF", "/", "~", "~/", "*", "-", "-r", "-rf", "-fr", "-s", "-sf", "--recursive", "--symbolic",
		"..", "../", `..\`, "=", ">", ">>", "/etc/", "/dev/", "/dev/null", "/dev/sda", "of=", "777", "root", "-9",
		"0", "6", "true", ":()", "fork()", "export", "path=", "$home", "${home}", "x", "ab", "_", "9", "A", "R",
		"\xe0", "é", "/bin/", "./", "curl", "wget", "down", "down2"}
	frags = append(frags, safety.Words...)
	// Structured commands: a rule word, then flag- and target-like
	// arguments; they reach the corners of the hand-written matchers.
	args := []string{"-r", "-rf", "-fr", "-r9", "-rf_", "-xr", "-s", "-fs", "-s1", "--recursive", "--recursive2",
		"--symbolic", "-9", "-99", "0", "6", "06", "true", "true_", "/", "~", "*", "a/b", "..", "../x", "x..",
		"|", "| sh", "|sh", "| /bin/bash", "|| bash", "| bash2", "| zsh", "2>/dev/null", "> /etc/x", "of=/dev/sda"}
	seps := []string{" ", "\t", "  ", "\n", ";", "=", ""}
	r := rand.New(rand.NewSource(1))
	for n := 0; n < 20000; n++ {
		var b strings.Builder
		if n%2 == 0 {
			for k := r.Intn(12); k >= 0; k-- {
				b.WriteString(frags[r.Intn(len(frags))])
			}
		} else {
			b.WriteString(safety.Words[r.Intn(len(safety.Words))])
			for k := r.Intn(4); k >= 0; k-- {
				b.WriteString(seps[r.Intn(len(seps))])
				b.WriteString(args[r.Intn(len(args))])
			}
		}
		cmd := b.String()
		if got, want := verdictOf(CheckCommand(cmd, SafetyPolicy{})), naiveVerdict(cmd); got != want {
			t.Fatalf("CheckCommand(%q) = %s, plain regexps say %s", cmd, got, want)
		}
	}
}

// TestSafetyCorpusConfined: under kernel confinement the workspace-escape
// class is not applied; every other verdict of the corpus stands.
func TestSafetyCorpusConfined(t *testing.T) {
	extra := SafetyPolicy{Blocked: []string{`\bforbidden-tool\b`}, Confined: true}
	for _, c := range loadSafetyCorpus(t) {
		want := c.verdict
		if want == "unsafe" {
			want = "pass"
		}
		if got := verdictOf(CheckCommand(c.command, SafetyPolicy{Confined: true})); got != want {
			t.Errorf("line %d: confined CheckCommand(%q) = %s, want %s", c.line, c.command, got, want)
		}
		if got := verdictOf(CheckCommand(c.command, extra)); got != want {
			t.Errorf("line %d: confined CheckCommand(%q) with a policy = %s, want %s", c.line, c.command, got, want)
		}
	}
	// The cache keeps confined and unconfined policies apart, and the
	// caller's patterns apply under confinement.
	for _, confined := range []bool{false, true, false} {
		p := SafetyPolicy{Blocked: []string{`\bforbidden-tool\b`}, Confined: confined}
		want := "unsafe"
		if confined {
			want = "pass"
		}
		if got := verdictOf(CheckCommand("cd src && make", p)); got != want {
			t.Errorf("confined %v: cd src && make = %s, want %s", confined, got, want)
		}
		if got := verdictOf(CheckCommand("forbidden-tool x", p)); got != "dangerous" {
			t.Errorf("confined %v: caller pattern = %s", confined, got)
		}
	}
}
