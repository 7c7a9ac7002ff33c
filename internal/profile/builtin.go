package profile

import (
	"embed"
	"strings"
	"sync"
)

//go:embed builtin/*.toml
var builtinFS embed.FS

// builtinSources returns the built-in profiles' TOML, by name. They are
// parsed by the same strict parser as user files, so each is also an
// example of the format. Read on first use, not at package init: the init
// stage, which never loads a profile, links this package too.
var builtinSources = sync.OnceValue(func() map[string][]byte {
	m := map[string][]byte{}
	entries, err := builtinFS.ReadDir("builtin")
	if err != nil {
		panic(err) // embedded at build time
	}
	for _, e := range entries {
		data, err := builtinFS.ReadFile("builtin/" + e.Name())
		if err != nil {
			panic(err)
		}
		m[strings.TrimSuffix(e.Name(), ".toml")] = data
	}
	return m
})

// BuiltinSource returns the TOML of the built-in profile name, to show it or
// copy it into a user profile.
func BuiltinSource(name string) ([]byte, bool) {
	b, ok := builtinSources()[name]
	return b, ok
}
