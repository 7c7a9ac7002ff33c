package env

import (
	"fmt"
	"testing"
)

// benchEnviron is a realistic 60-variable login environment: the usual shell,
// locale, XDG, terminal and toolchain variables, one temp variable already
// set (replaced by Build) and one duplicated name (last one wins).
func benchEnviron() []string {
	vars := []string{
		"HOME=/home/alice",
		"USER=alice",
		"LOGNAME=alice",
		"SHELL=/bin/bash",
		"PATH=/home/alice/.local/bin:/home/alice/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"PWD=/home/alice/src/project",
		"OLDPWD=/home/alice",
		"LANG=en_US.UTF-8",
		"LC_ALL=en_US.UTF-8",
		"LC_CTYPE=en_US.UTF-8",
		"TERM=xterm-256color",
		"COLORTERM=truecolor",
		"TERM_PROGRAM=vscode",
		"TERM_PROGRAM_VERSION=1.95.3",
		"EDITOR=vim",
		"VISUAL=vim",
		"PAGER=less",
		"LESS=-R",
		"SHLVL=2",
		"XDG_RUNTIME_DIR=/run/user/1000",
		"XDG_CONFIG_HOME=/home/alice/.config",
		"XDG_DATA_HOME=/home/alice/.local/share",
		"XDG_CACHE_HOME=/home/alice/.cache",
		"XDG_SESSION_TYPE=wayland",
		"XDG_SESSION_CLASS=user",
		"XDG_CURRENT_DESKTOP=GNOME",
		"XDG_DATA_DIRS=/usr/share/gnome:/usr/local/share/:/usr/share/",
		"XDG_CONFIG_DIRS=/etc/xdg/xdg-ubuntu:/etc/xdg",
		"DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/1000/bus",
		"DISPLAY=:0",
		"WAYLAND_DISPLAY=wayland-0",
		"SSH_AUTH_SOCK=/run/user/1000/keyring/ssh",
		"GPG_AGENT_INFO=/run/user/1000/gnupg/S.gpg-agent:0:1",
		"TMPDIR=/home/alice/tmp",
		"GOPATH=/home/alice/go",
		"GOROOT=/usr/local/go",
		"GOFLAGS=-mod=readonly",
		"GOPROXY=https://proxy.golang.org,direct",
		"CARGO_HOME=/home/alice/.cargo",
		"RUSTUP_HOME=/home/alice/.rustup",
		"NVM_DIR=/home/alice/.nvm",
		"NODE_OPTIONS=--max-old-space-size=4096",
		"NPM_CONFIG_PREFIX=/home/alice/.npm-global",
		"PYTHONDONTWRITEBYTECODE=1",
		"VIRTUAL_ENV=/home/alice/src/project/.venv",
		"PIP_DISABLE_PIP_VERSION_CHECK=1",
		"JAVA_HOME=/usr/lib/jvm/java-21-openjdk-amd64",
		"ANTHROPIC_API_KEY=sk-ant-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
		"OPENAI_API_KEY=sk-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
		"GIT_EDITOR=vim",
		"HISTSIZE=100000",
		"HISTFILESIZE=200000",
		"HISTCONTROL=ignoreboth",
		"LS_COLORS=rs=0:di=01;34:ln=01;36:mh=00:pi=40;33:so=01;35:do=01;35:bd=40;33;01:cd=40;33;01:or=40;31;01:mi=00:su=37;41:sg=30;43:ca=00:tw=30;42:ow=34;42:st=37;44:ex=01;32",
		"MAIL=/var/mail/alice",
		"MOTD_SHOWN=pam",
		"SESSION_MANAGER=local/host:@/tmp/.ICE-unix/2210,unix/host:/tmp/.ICE-unix/2210",
		"GNOME_TERMINAL_SCREEN=/org/gnome/Terminal/screen/0",
		"_=/usr/bin/agentbox",
		"EDITOR=nvim", // a duplicate: the last one wins
	}
	if len(vars) != 60 {
		panic(fmt.Sprintf("benchEnviron has %d variables, want 60", len(vars)))
	}
	return vars
}

func BenchmarkBuild(b *testing.B) {
	base := benchEnviron()
	s := Session{ID: "0123456789ab", RuntimeDir: "/run/user/1000"}
	b.ReportAllocs()
	for b.Loop() {
		out := Build(base, s)
		if len(out) == 0 {
			b.Fatal("empty environment")
		}
	}
}
