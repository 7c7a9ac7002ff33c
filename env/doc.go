// Package env builds the environment of the sandboxed command.
//
// It is pure: it works only on the variables it is given and never reads the
// process environment, so every rule is unit-tested. It does not check
// directories (the init stage does, after the mounts).
//
//	vars := env.Build(os.Environ(), env.Session{ID: id, RuntimeDir: "/run/user/1000"})
package env
