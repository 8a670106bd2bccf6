package safety

import (
	"regexp"
	"slices"
	"strings"
)

// Rule is one class of dangerous command. Rules are matched on the
// pre-processed (heredoc-stripped, lower-cased, allowlist-masked) text.
//
// To keep the check far cheaper than a process spawn, most rules carry a
// prefilter: words (any of these whole words must be present, as Go's \b
// defines words) and lits (every one of these substrings must be present).
// A rule with no regexp is a pure keyword rule: \b(w1|w2|…)\b, which the word
// scan decides alone. src is the rule's full meaning as one regular
// expression; the tests check that the fast path agrees with it.
//
// Regexps that start with \bWORD for one of the rule's words (leadWord) are
// searched from the first such word only. The hottest patterns are matched
// by hand-written functions (find, in match.go), which the tests hold
// to the same meaning as src.
type Rule struct {
	class    string
	code     Code
	src      string
	re       *regexp.Regexp // nil: keyword rule (or find)
	leadWord bool           // re starts with \b(one of words): search from the first
	find     func(text string) (start, end int)
	words    wordSet
	lits     []string
	guidance string
}

func (r *Rule) match(text string, present wordSet) (string, bool) {
	if r.words != 0 && present&r.words == 0 {
		return "", false
	}
	for _, l := range r.lits {
		if !strings.Contains(text, l) {
			return "", false
		}
	}
	switch {
	case r.find != nil:
		if i, j := r.find(text); i >= 0 {
			return text[i:j], true
		}
		return "", false
	case r.re == nil:
		return firstWord(present & r.words), true
	case r.leadWord:
		// Every match starts at one of the rule's words: search from the
		// first one (a word start keeps \b's meaning at the cut).
		for p := 0; p < len(text); {
			start, end := nextWord(text, p)
			if start < 0 {
				return "", false
			}
			if wordBit(text[start:end])&r.words != 0 {
				loc := r.re.FindStringIndex(text[start:])
				if loc == nil {
					return "", false
				}
				return text[start+loc[0] : start+loc[1]], true
			}
			p = end
		}
		return "", false
	}
	loc := r.re.FindStringIndex(text)
	if loc == nil {
		return "", false
	}
	return text[loc[0]:loc[1]], true
}

// nextWord finds the first whole word at or after p and returns its bounds;
// start is -1 when there is none.
func nextWord(text string, p int) (start, end int) {
	i := p
	for i < len(text) && !isWordByte(text[i]) {
		i++
	}
	if i == len(text) {
		return -1, len(text)
	}
	j := i + 1
	for j < len(text) && isWordByte(text[j]) {
		j++
	}
	return i, j
}

// Code is the error code of a match of r.
func (r *Rule) Code() Code { return r.code }

// Class names what r catches ("pipe to shell", …): the start of the error's
// reason.
func (r *Rule) Class() string { return r.class }

// Guidance says what to do instead.
func (r *Rule) Guidance() string { return r.guidance }

// Src is r's whole meaning as one regular expression, which the fast path
// (prefilters, hand-written matchers) must agree with.
func (r *Rule) Src() string { return r.src }

// wordSet is a bit set over Words.
type wordSet uint64

// Words are the whole words the rules look for.
var Words = []string{
	"rm", "dd", "sudo", "su", "doas", "chmod", "chown", "nc", "ncat", "netcat",
	"telnet", "ftp", "ssh", "scp", "rsync", "kill", "killall", "pkill",
	"shutdown", "reboot", "halt", "init", "mount", "umount", "fdisk", "mkfs",
	"fsck", "eval", "while", "yes", "iptables", "ifconfig", "tee", "cp", "mv",
	"ln", "cd", "pushd", "popd", "sh", "bash", "zsh", "fish", "dash", "ksh",
}

var safetyWordBits = func() map[string]wordSet {
	if len(Words) > 64 {
		panic("agentbe: too many safety words")
	}
	m := make(map[string]wordSet, len(Words))
	for i, w := range Words {
		m[w] = 1 << i
	}
	return m
}()

func words(ws ...string) wordSet {
	var s wordSet
	for _, w := range ws {
		b, ok := safetyWordBits[w]
		if !ok {
			panic("agentbe: unknown safety word " + w)
		}
		s |= b
	}
	return s
}

func firstWord(s wordSet) string {
	for i, w := range Words {
		if s&(1<<i) != 0 {
			return w
		}
	}
	return ""
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// presentWords returns the Words that occur as whole words in text.
func presentWords(text string) wordSet {
	var s wordSet
	for p := 0; ; {
		start, end := nextWord(text, p)
		if start < 0 {
			return s
		}
		s |= wordBit(text[start:end])
		p = end
	}
}

// wordBit returns w's bit, 0 if w is not a safety word. Words are packed
// into a uint64 and looked up by binary search: no hashing per token.
func wordBit(w string) wordSet {
	if len(w) > 8 {
		return 0
	}
	k := packWord(w)
	i, j := 0, len(packedWords)
	for i < j {
		h := (i + j) / 2
		if packedWords[h] < k {
			i = h + 1
		} else {
			j = h
		}
	}
	if i < len(packedWords) && packedWords[i] == k {
		return packedBits[i]
	}
	return 0
}

func packWord(w string) uint64 {
	var k uint64
	for i := 0; i < len(w); i++ {
		k = k<<8 | uint64(w[i])
	}
	return k | uint64(len(w))<<60
}

var packedWords, packedBits = func() ([]uint64, []wordSet) {
	keys := make([]uint64, 0, len(Words))
	for _, w := range Words {
		keys = append(keys, packWord(w))
	}
	slices.Sort(keys)
	bits := make([]wordSet, len(keys))
	for i, k := range keys {
		for _, w := range Words {
			if packWord(w) == k {
				bits[i] = safetyWordBits[w]
			}
		}
	}
	return keys, bits
}()

const (
	guideRm       = "Delete specific paths inside the workspace, e.g. rm -rf build"
	guidePriv     = "Commands run with the backend's own permissions; sudo, su and doas are not available"
	guidePipe     = "Download to a file first, inspect it, then execute if safe"
	guideNet      = "Remote shells and copy tools are blocked; use the backend's file operations to move data"
	guideProc     = "Stop commands with a timeout or by cancelling the context instead"
	guideSubst    = "Run the inner command separately and pass its output explicitly"
	guideCd       = "Use the working-directory option (ExecOptions.Dir / cwd) instead of changing directory"
	guideEnv      = "Pass environment variables with the env option instead of exporting them"
	guideHome     = "Use paths relative to the workspace; HOME is the working directory"
	guideParent   = "Stay inside the workspace: use paths relative to the working directory, without .."
	guideSys      = "Work on files inside the workspace; system files are off limits"
	guideObfusc   = "Write commands plainly; quote-splitting a word is treated as obfuscation"
	guideSymlink  = "Copy the file instead of linking to it"
	guideResource = "Bound loops and output; runaway processes are blocked"
)

func rule(class string, code Code, src string, ws wordSet, lits []string, guidance string) Rule {
	return Rule{class: class, code: code, src: src, re: regexp.MustCompile(src),
		words: ws, lits: lits, guidance: guidance}
}

// wordRule is a rule whose every alternative starts with \b(one of ws):
// its regexp is searched from the first occurrence of those words.
func wordRule(class string, code Code, src string, ws []string, lits []string, guidance string) Rule {
	return Rule{class: class, code: code, src: src, re: regexp.MustCompile(src),
		leadWord: true, words: words(ws...), lits: lits, guidance: guidance}
}

// findRule is a rule matched by a hand-written function equivalent to src.
// onlyWith gates r on the presence of one of ws, which its pattern requires
// as a whole word.
func (r Rule) onlyWith(ws ...string) Rule {
	r.words = words(ws...)
	return r
}

func findRule(class string, code Code, src string, find func(string) (int, int), lits []string, guidance string) Rule {
	return Rule{class: class, code: code, src: src, find: find, lits: lits, guidance: guidance}
}

func keywordRule(class string, code Code, ws []string, guidance string) Rule {
	return Rule{class: class, code: code, src: `\b(?:` + strings.Join(ws, "|") + `)\b`,
		words: words(ws...), guidance: guidance}
}

// Rules are the dangerous patterns of the safety list, then the
// workspace-escape patterns. Patterns marked "added" are not in the list;
// they close obvious gaps of the listed ones (rm -fr, ln -sf, tee /etc/x,
// | /bin/sh, a bare "..").
var Rules = []Rule{
	// the documented pattern (docs/safety.md): \brm\b.*-rf?\b.*[/~*] and \brm\b.*[/~*].*-rf?\b; added:
	// other spellings of the recursive flag (-fr, -r -f, -R, --recursive).
	findRule("destructive rm", CodeDangerous,
		`\brm\b.*(?:`+rmFlag+`.*[/~*]|[/~*].*`+rmFlag+`)`, findDestructiveRm, nil, guideRm).onlyWith("rm"),
	wordRule("disk wipe", CodeDangerous, `\bdd\b.*\bof=/dev/`, []string{"dd"}, []string{"of=/dev/"}, guideSys),
	rule("disk wipe", CodeDangerous, // added
		`>\s*/dev/(?:sd|hd|vd|xvd|nvme|mmcblk|disk)`, 0, []string{"/dev/"}, guideSys),
	keywordRule("privilege escalation", CodeDangerous, []string{"sudo", "su", "doas"}, guidePriv),
	wordRule("system modification", CodeDangerous, `\bchmod\b.*777`, []string{"chmod"}, []string{"777"}, guideSys),
	wordRule("system modification", CodeDangerous, `\bchown\b.*root`, []string{"chown"}, []string{"root"}, guideSys),
	findRule("pipe to shell", CodeDangerous, `curl\b.*\|\s*(sh|bash|zsh|fish)\b`, findToolPipe("curl"), []string{"curl", "|"}, guidePipe).onlyWith(shellWords...),
	findRule("pipe to shell", CodeDangerous, `wget\b.*\|\s*(sh|bash|zsh|fish)\b`, findToolPipe("wget"), []string{"wget", "|"}, guidePipe).onlyWith(shellWords...),
	// the documented pattern (docs/safety.md): \|\s*(sh|bash|zsh|fish)\s*$; added: anywhere, with a path.
	findRule("pipe to shell", CodeDangerous,
		`\|\s*(sh|bash|zsh|fish)\s*$`+
			`|(?:^|[^|])\|\s*(?:\S*/)?(?:sh|bash|zsh|fish|dash|ksh)\b`,
		findPipeToShell, []string{"|"}, guidePipe).onlyWith(shellWords...),
	keywordRule("network tool", CodeDangerous,
		[]string{"nc", "ncat", "netcat", "telnet", "ftp", "ssh", "scp", "rsync"}, guideNet),
	findRule("process control", CodeDangerous, `\bkill\s+-9`,
		findWordThen("kill", func(r string) int { return prefixLen(r, "-9") }), nil, guideProc).onlyWith("kill"),
	keywordRule("process control", CodeDangerous,
		[]string{"killall", "pkill", "shutdown", "reboot", "halt"}, guideProc),
	findRule("system control", CodeDangerous, `\binit\s+[06]\b`,
		findWordThen("init", func(r string) int {
			if r != "" && (r[0] == '0' || r[0] == '6') && (len(r) == 1 || !isWordByte(r[1])) {
				return 1
			}
			return -1
		}), nil, guideProc).onlyWith("init"),
	keywordRule("filesystem manipulation", CodeDangerous,
		[]string{"mount", "umount", "fdisk", "mkfs", "fsck"}, guideSys),
	rule("command substitution", CodeDangerous, "`[^`]+`", 0, []string{"`"}, guideSubst),
	rule("command substitution", CodeDangerous, `\$\([^)]+\)`, 0, []string{"$("}, guideSubst),
	keywordRule("remote code execution (eval)", CodeDangerous, []string{"eval"}, guideSubst),
	rule("fork bomb", CodeDangerous, `:\(\)`, 0, []string{":()"}, guideResource),
	rule("fork bomb", CodeDangerous, `fork\(\)`, 0, []string{"fork()"}, guideResource),
	findRule("resource exhaustion", CodeDangerous, `\bwhile\s+true\b`,
		findWordThen("while", func(r string) int { return wordPrefixLen(r, "true") }), nil, guideResource).onlyWith("while"),
	wordRule("resource exhaustion", CodeDangerous, `\byes\b.*>\s*/dev/null`, []string{"yes"}, []string{"/dev/null"}, guideResource),
	keywordRule("network tampering", CodeDangerous, []string{"iptables"}, guideSys),
	wordRule("network tampering", CodeDangerous, `\bifconfig\b.*\bdown\b`, []string{"ifconfig"}, nil, guideSys),
	rule("system file write", CodeDangerous,
		`>>?\s*/etc/|\bcat\b.*>\s*/etc/|\becho\b.*>\s*/etc/`, 0, []string{">", "/etc/"}, guideSys),
	wordRule("system file write", CodeDangerous, // added
		`\btee\b(?:\s+-\S+)*\s+/etc/`, []string{"tee"}, []string{"/etc/"}, guideSys),
	findRule("obfuscation", CodeDangerous, `[a-z]""[a-z]`, findSplitWord(`""`), nil, guideObfusc),
	findRule("obfuscation", CodeDangerous, `[a-z]''[a-z]`, findSplitWord(`''`), nil, guideObfusc),
	wordRule("traversal in copy", CodeDangerous, `\b(cp|mv|ln)\b.*\.\./`, []string{"cp", "mv", "ln"}, []string{"../"}, guideParent),
	findRule("symlink creation", CodeDangerous,
		`\bln\s+-s|\bln\s+(?:-[a-z]*s[a-z]*|--symbolic)\b`, // added: -fs, --symbolic
		findWordThen("ln", symlinkFlagLen), nil, guideSymlink).onlyWith("ln"),

	keywordRule("directory change", CodeUnsafe, []string{"cd", "pushd", "popd"}, guideCd),
	rule("environment manipulation", CodeUnsafe, `export\s+(path|home|pwd)=`, 0, []string{"export"}, guideEnv),
	rule("home directory reference", CodeUnsafe, `~/`, 0, []string{"~/"}, guideHome),
	rule("home directory reference", CodeUnsafe, `\$home`, 0, []string{"$home"}, guideHome),
	rule("home directory reference", CodeUnsafe, `\$\{home\}`, 0, []string{"${home}"}, guideHome),
	findRule("parent directory traversal", CodeUnsafe,
		`\.\.[/\\]`+
			`|(?:^|[\s=])\.\.(?:$|[\s;&|)])`, // added: a bare ".." argument
		findParentRef, nil, guideParent),
}

// shellWords are the shells a pipe-to-shell pattern names.
var shellWords = []string{"sh", "bash", "zsh", "fish", "dash", "ksh"}
