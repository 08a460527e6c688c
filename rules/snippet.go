package rules

import (
	"sync"

	"github.com/itchyny/gojq"
)

// Snippet is a jq expression of a rule (a jq step's forward or reverse, a
// when condition), compiled for the native executor on its first use: a
// process that converts one manifest runs few of the built-in library's
// expressions, and each costs a fraction of a millisecond to compile.
// Validation has compiled a user's expressions already, and the built-in
// library's tests compile every one of its own, so Code fails only on a
// broken build.
type Snippet struct {
	Src string

	once sync.Once
	code *gojq.Code
	err  error
}

// NewSnippet returns the expression src, not yet compiled.
func NewSnippet(src string) *Snippet { return &Snippet{Src: src} }

// Code returns the compiled expression; safe for concurrent use.
func (s *Snippet) Code() (*gojq.Code, error) {
	s.once.Do(func() {
		q, err := gojq.Parse(s.Src)
		if err != nil {
			s.err = err
			return
		}
		s.code, s.err = gojq.Compile(q)
	})
	return s.code, s.err
}
