package grep

//go:generate go run gen_types.go

import (
	"regexp"
	"sort"
)

// typeMatcher selects files by ripgrep file type: a file whose basename
// matches one of the type's globs is whitelisted, any other file ignored.
type typeMatcher struct {
	res []*regexp.Regexp
}

// TypeError is an unknown file type name.
type TypeError struct{ Name string }

func (e *TypeError) Error() string { return "unrecognized file type: " + e.Name }

func newTypeMatcher(name string) (*typeMatcher, error) {
	var globs []string
	if name == "all" {
		names := make([]string, 0, len(rgTypes))
		for n := range rgTypes {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			globs = append(globs, rgTypes[n]...)
		}
	} else {
		g, ok := rgTypes[name]
		if !ok {
			return nil, &TypeError{Name: name}
		}
		globs = g
	}
	tm := &typeMatcher{}
	for _, g := range globs {
		src, msg := globToRegexp(g, false)
		if msg != "" {
			continue
		}
		tm.res = append(tm.res, regexp.MustCompile(src))
	}
	return tm, nil
}

func (t *typeMatcher) match(base string) bool {
	for _, re := range t.res {
		if re.MatchString(base) {
			return true
		}
	}
	return false
}
