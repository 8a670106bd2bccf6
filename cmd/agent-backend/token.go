package main

import (
	"fmt"
	"strings"
)

// minTokenBytes is the shortest bearer token the daemon accepts from its
// command line (--auth-token, --auth-token-file, --auth-token-fd, and the
// image's AUTH_TOKEN, which the entrypoint hands over as a file): 32 bytes,
// what `openssl rand -hex 16` prints, so a token has at least 128 bits when
// it is random. daemon.Config does not enforce it (tests and embedders pass
// what they like); the CLI, which is what deployments run, does.
const minTokenBytes = 32

// placeholderTokens are values that appeared in examples and manifests as
// "replace me": long enough to pass the length rule, known to everyone.
// Compared case-insensitively.
var placeholderTokens = []string{
	"change-me-to-a-long-random-value",
	"changeme-changeme-changeme-changeme",
	"replace-me-with-a-long-random-value",
	"replace-with-output-of-openssl-rand-hex-32",
	"your-secret-token-goes-here-please-change",
	"00000000000000000000000000000000",
	"0000000000000000000000000000000000000000000000000000000000000000",
}

// tokenHowTo says how to make a good token; every refusal ends with it.
const tokenHowTo = "make one with: openssl rand -hex 32"

// checkAuthToken refuses a token a daemon must not be guarded by: shorter
// than minTokenBytes, a known placeholder, or one character repeated. The
// message never shows the token (it is in logs and terminals), only its
// length.
func checkAuthToken(flag, tok string) error {
	switch {
	case len(tok) < minTokenBytes:
		return fmt.Errorf("%s: the token is %d bytes; at least %d are required (%s)", flag, len(tok), minTokenBytes, tokenHowTo)
	case isPlaceholderToken(tok):
		return fmt.Errorf("%s: the token is a published placeholder, not a secret (%s)", flag, tokenHowTo)
	}
	return nil
}

// isPlaceholderToken reports whether tok is a known placeholder or a
// single character repeated.
func isPlaceholderToken(tok string) bool {
	for _, p := range placeholderTokens {
		if strings.EqualFold(tok, p) {
			return true
		}
	}
	return tok != "" && strings.Count(tok, tok[:1]) == len(tok)
}
