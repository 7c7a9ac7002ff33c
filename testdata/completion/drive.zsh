# zsh -f drive.zsh source|autoload SCRIPT WORD...
#
# Loads the completion SCRIPT (sourced, or autoloaded from its directory as
# compinit would, where it must be named _agentbox), completes the command
# line WORD... with the cursor at the end of the last word, and prints what
# the completion function offered, one per line. zsh's completion builtins
# work only inside a completion widget, which needs a terminal; here they are
# functions that print their candidates instead, so the test sees what the
# script asked for: names for _describe and compadd, <files> and <dirs> for
# _files and _directories, and <normal WORDS CURRENT> when the words were
# handed to _normal, which completes them as a command line of their own.
compdef() { : }
_describe() { print -rl -- "${(@)${(P)${@[-1]}}%%:*}" }
compadd() { [[ $1 == -a ]] && print -rl -- "${(@P)2}" }
compset() { : }
_files() { print -r -- '<files>' }
_directories() { print -r -- '<dirs>' }
_normal() { print -r -- "<normal ${words[*]} $CURRENT>" }
case $1 in
(source) source $2 || exit 2 ;;
(autoload) fpath=(${2:h} $fpath); autoload -Uz _agentbox ;;
(*) exit 2 ;;
esac
shift 2
words=("$@")
CURRENT=$#words
_agentbox
