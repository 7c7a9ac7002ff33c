package profile

import "strconv"

// ParseError is a profile or config file that agentbox refuses: a TOML syntax
// error, an unknown key, a value of the wrong type, or a value that decodes
// but means nothing safe (a relative path, a path with "..", an unknown
// extends target, a cycle). Line and Col are 1-based and point at the
// offending key or value; 0 when the position is unknown.
type ParseError struct {
	File string // the file's path, or "builtin:NAME" for a built-in profile
	Line int
	Col  int
	Msg  string
}

// Error formats the error as FILE:LINE:COL: MSG, leaving out COL, then LINE,
// when they are unknown.
func (e *ParseError) Error() string {
	s := e.File
	if e.Line > 0 {
		s += ":" + strconv.Itoa(e.Line)
		if e.Col > 0 {
			s += ":" + strconv.Itoa(e.Col)
		}
	}
	return s + ": " + e.Msg
}
