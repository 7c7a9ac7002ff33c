// Package profile says what an agent needs outside the sandbox's private
// directories: built-in profiles for known agents, the user's own profiles
// and config file under ~/.config/agentbox, and how a profile is chosen and
// merged with the profiles it extends.
//
// It is pure except for reading the user's files: it decides nothing about
// mounts or Landlock, creates nothing, and never reads a file from the
// working directory (the agent's project, which the agent can write) unless
// --profile names it explicitly. The sandbox package turns a resolved
// Profile and Config into mounts, Landlock rules and directories to create.
//
// Use:
//
//	e := profile.Env{Home: home, ConfigDir: profile.DefaultConfigDir(home, os.Getenv("XDG_CONFIG_HOME"))}
//	cfg, err := profile.LoadConfig(e)     // ~/.config/agentbox/config.toml; missing: zero Config
//	name := flagProfile
//	if name == "" {
//		name = cfg.Profile
//	}
//	p, err := profile.Resolve(e, name, argv[0]) // chosen, merged, ~ expanded, checked
//	for _, r := range p.RW {
//		// r.Path is absolute and clean; create it first when r.Create (a file when r.File)
//	}
//
// # Files
//
// ~/.config/agentbox/ ($XDG_CONFIG_HOME/agentbox when XDG_CONFIG_HOME is
// absolute) holds config.toml (optional) and profiles/NAME.toml. Both are
// TOML, decoded strictly: an unknown key (spelled exactly, lower case), a
// value of the wrong type, a duplicate key, an empty or relative path or a
// path with a ".." component is an error naming the file, line and column
// (*ParseError). Paths are absolute or start with ~/ (the home directory);
// no other expansion is done.
//
// Each file must be a regular file owned by the user or root and not
// writable by other users (nor by a group other than the user's primary
// group): whoever can write it decides what the sandbox may do.
//
// # Profile keys
//
//	description   string
//	extends       string: NAME, builtin:NAME, or "" for none; absent means "default"
//	commands      list of command base names that choose this profile
//	rw            paths the agent may write (when they exist at start)
//	create        directories the agent may write, created (0700) when missing
//	create_files  regular files the agent may write, created empty (0600) when missing
//	ro            paths made read-only, even inside a writable tree
//	hide          paths replaced by an empty directory or file
//	show          paths hidden by agentbox's defaults or a parent profile, shown again
//	notes         list of strings shown to the user: known limitations
//
// create and create_files are accepted only for paths inside the home
// directory; rw, create and create_files refuse / and the home directory
// and its ancestors (that would void the policy: use --rw to mean it).
//
// # Choosing a profile
//
// --profile FILE (a value with a "/" or ending in .toml) reads that file.
// --profile NAME, defaults.profile and extends = "NAME" mean
// profiles/NAME.toml when it exists, else the built-in NAME; builtin:NAME is
// always the built-in. So a user profile with a built-in's name replaces it,
// and can build on it with extends = "builtin:NAME" (extends = "NAME" there
// is a cycle, and the error says so).
//
// Without --profile (or defaults.profile), the base name of the command
// chooses: a user profile whose file name or commands list names it (two
// such profiles are an error), else a built-in whose commands list does,
// else the profile named default. Every user profile file is parsed for
// this, so a broken one is reported even when another is chosen.
//
// # Merging
//
// A profile without an extends key extends "default" (a user's
// profiles/default.toml extends builtin:default); the built-in default is
// the root. Resolve merges the chain root first: a child's rules follow its
// parent's (within one file: create, create_files, then rw); a path listed
// again keeps its first Source and gains the later Create and File. A child's show removes that path from its
// ancestors' hides, a child's hide from their shows. Chains are at most 16
// profiles; a cycle is an error naming the chain.
package profile
