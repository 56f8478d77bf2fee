/*
 * File operations run small POSIX shell scripts inside the container (busybox
 * and coreutils both suffice), with the logical path as an argument, never
 * spliced into the script. The path holds no newline (workspacePath refuses
 * one), and no captured path may either:
 *
 * - `$(cmd)` drops every trailing newline, so a symlink to "/workspace/d<newline>"
 *   would read as /workspace/d, maybe another symlink, out of the workspace.
 *   Captures end in a sentinel (`$(cmd && echo .)`, then `${x%?.}` takes off
 *   exactly the ".\n" added and the one newline cmd printed).
 * - Anything resolved to a name holding a newline is refused, and listings
 *   leave such names out, so an output line is always one whole path.
 * - A path's folder and last name come from parameter expansions (`%` and
 *   `##` with a slash pattern), never from captured dirname and basename.
 *
 * What a script finally hands to cat, rm or (through its output) putArchive
 * is the path it checked, with every symlink resolved.
 */

/** How a file script says why it refused. */
export const FILE_SCRIPT_EXIT = {
  missing: 2,
  /** read: not a regular file; write: a folder. */
  wrongKind: 3,
  /** Resolves through a symlink outside /workspace. */
  escape: 4,
  /** Resolves through a symlink to a name holding a newline. */
  newlineName: 6,
} as const;

const HELPERS = `nl='
'
# real := $1 (which exists) with every symlink resolved; exits unless that is under /workspace and has no newline.
resolve() {
  real=$(readlink -f -- "$1" && echo .) || exit 1
  real=\${real%?.}
  case $real in *"$nl"*) exit ${FILE_SCRIPT_EXIT.newlineName};; /workspace|/workspace/*) ;; *) exit ${FILE_SCRIPT_EXIT.escape};; esac
}`;

export const FILE_SCRIPTS = {
  read: `${HELPERS}
[ -e "$1" ] || exit ${FILE_SCRIPT_EXIT.missing}
resolve "$1"
[ -f "$real" ] || exit ${FILE_SCRIPT_EXIT.wrongKind}
exec cat -- "$real"`,

  /**
   * The deepest existing folder is checked before `mkdir -p`, which would
   * otherwise create folders outside /workspace through a symlink. Prints the
   * existing file's mode and owner (or "new"), then the real path to write: a
   * symlink's target, as writing through a link does.
   */
  prepareWrite: `${HELPERS}
parent=\${1%/*}
probe=$parent
while [ ! -e "$probe" ] && [ ! -L "$probe" ]; do probe=\${probe%/*}; probe=\${probe:-/}; done
resolve "$probe"
mkdir -p -- "$parent" 2>/dev/null
resolve "$parent"
target=$real/\${1##*/}
if [ -L "$target" ]; then resolve "$target"; target=$real; fi
[ -d "$target" ] && exit ${FILE_SCRIPT_EXIT.wrongKind}
if [ -f "$target" ]; then stat -c '%a %u %g' -- "$target"; else echo new; fi
printf '%s\\n' "$target"`,

  /** Only the parent is resolved: rm removes a symlink itself, never its target. */
  delete: `${HELPERS}
if [ "$1" = /workspace ]; then find /workspace -mindepth 1 -maxdepth 1 -exec rm -rf -- {} +; exit 0; fi
parent=\${1%/*}
[ -e "$parent" ] || exit 0
resolve "$parent"
rm -rf -- "$real/\${1##*/}"`,

  /** Lists nothing for a path outside /workspace. */
  list: `${HELPERS}
[ -e "$1" ] || exit 0
real=$(readlink -f -- "$1" && echo .) || exit 0
real=\${real%?.}
case $real in *"$nl"*) exit 0;; /workspace|/workspace/*) ;; *) exit 0;; esac
if [ -d "$real" ]; then find "$real" -mindepth 1 \\( -name "*$nl*" -prune \\) -o \\( -type f -o -type d \\) -exec stat -c '%F|%s|%n' -- {} +; else stat -c '%F|%s|%n' -- "$real"; fi`,
};
