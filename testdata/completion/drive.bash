# bash --norc --noprofile drive.bash SCRIPT WORD...
#
# Loads the completion SCRIPT, completes the command line WORD... as bash
# would with the cursor at the end of the last word (give "" to complete a
# new word), and prints the candidates, one per line. The words are split as
# bash splits them for completion: --flag=value is the three words --flag, =
# and value (COMP_WORDBREAKS holds "=").
source "$1" || exit 2
shift
COMP_WORDS=("$@")
COMP_CWORD=$(($# - 1))
COMP_LINE="$*"
COMP_POINT=${#COMP_LINE}
COMPREPLY=()
_agentbox
if ((${#COMPREPLY[@]})); then
	printf '%s\n' "${COMPREPLY[@]}"
fi
