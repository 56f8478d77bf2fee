/*
 * The file calls of a sandbox with a physical /workspace run these small
 * POSIX shell scripts inside it, as `sh -c SCRIPT sh PATH`: the Docker sandbox
 * through docker exec, the hosted ones inside their command wrapper. Either
 * way the image's own sh runs them (busybox and coreutils both suffice), so one
 * copy serves both. The logical path is an argument, never spliced into the
 * script; it holds no newline (workspacePath refuses one), and no captured
 * path may either:
 *
 * - `$(cmd)` drops every trailing newline, so a symlink to "/workspace/d<newline>"
 *   would read as /workspace/d, maybe another symlink, out of the workspace.
 *   Captures end in a sentinel: `$(cmd && echo .)` ends in ".", which $(...)
 *   keeps, and `${x%?.}` then takes off that "." and the one newline cmd printed.
 * - Anything resolved to a name holding a newline is refused, and listings
 *   leave such names out, so an output line is always one whole path.
 * - A path's folder and last name come from parameter expansions (`%` and
 *   `##` with a slash pattern), never from captured dirname and basename.
 *
 * What a script finally hands to cat or rm, or prints for the caller to read
 * or write through its own channel (a provider's file API), is the path it
 * checked, with every symlink resolved. A write through a channel of root's
 * would follow a symlink a command swaps in after the check: `write` takes the
 * bytes on stdin and writes them as the user the script runs as instead.
 */

/** How a file script says why it refused. */
export const FILE_SCRIPT_EXIT = {
  missing: 2,
  /** read: not a regular file; write: a folder. */
  wrongKind: 3,
  /** Resolves through a symlink outside /workspace. */
  escape: 4,
  /** A file (or a symlink leading nowhere) stands where a folder of the path is needed. */
  fileInTheWay: 5,
  /** Resolves through a symlink to a name holding a newline. */
  newlineName: 6,
  /** write: more symlinks in a chain than the kernel follows. */
  tooManyLinks: 7,
  /** /workspace itself is gone (a command removed it) or is no folder. */
  workspaceMissing: 8,
  /** write: a FIFO, a socket or a device stands at the path. */
  notRegularFile: 9,
  /** write: fewer bytes arrived than were sent (its stdin was cut short). */
  shortWrite: 10,
} as const;

/** How many symlinks a write follows, as the kernel's ELOOP limit does. */
const MAX_SYMLINK_HOPS = 40;

const HELPERS = `nl='
'
# real := $1 (which exists) with every symlink resolved; exits unless that is under /workspace and has no newline.
resolve() {
  real=$(readlink -f -- "$1" && echo .) || exit 1
  real=\${real%?.}
  case $real in *"$nl"*) exit ${FILE_SCRIPT_EXIT.newlineName};; /workspace|/workspace/*) ;; *) exit ${FILE_SCRIPT_EXIT.escape};; esac
}
# real := the deepest part of $1 that exists, resolved as above.
ancestor() {
  probe=$1
  while [ ! -e "$probe" ]; do probe=\${probe%/*}; probe=\${probe:-/}; done
  resolve "$probe"
}
# Without it, every search for an existing ancestor would end at "/", outside the workspace.
[ -d /workspace ] || exit ${FILE_SCRIPT_EXIT.workspaceMissing}`;

/** $real := the regular file $1 names, checked as resolve does. */
const FIND_FILE = `${HELPERS}
[ -e "$1" ] || { ancestor "$1"; exit ${FILE_SCRIPT_EXIT.missing}; }
resolve "$1"
[ -f "$real" ] || exit ${FILE_SCRIPT_EXIT.wrongKind}`;

/*
 * $t := the real path a write of $1 goes to, refused as the local sandbox
 * refuses it. Follows a symlink at the target hop by hop, as the local sandbox
 * does: each hop's folder is checked at its deepest existing part before
 * mkdir -p makes the rest, and checked again once made. A link's text is made
 * absolute and its "." and ".." taken out lexically first, so mkdir -p never
 * climbs out of the checked part.
 */
const WRITE_TARGET = `${HELPERS}
# t := $1 made absolute against $2 (a resolved folder), "", "." and ".." taken out.
lexical() {
  case $1 in /*) path=$1;; *) path=$2/$1;; esac
  t=; set -f; ifs=$IFS; IFS=/
  for part in $path; do case $part in ''|.) ;; ..) t=\${t%/*};; *) t=$t/$part;; esac; done
  IFS=$ifs; set +f
  t=\${t:-/}
}
t=$1
hops=0
while :; do
  [ "$t" = /workspace ] && exit ${FILE_SCRIPT_EXIT.wrongKind}
  dir=\${t%/*}; dir=\${dir:-/}
  probe=$dir
  while [ ! -e "$probe" ]; do
    [ -L "$probe" ] && exit ${FILE_SCRIPT_EXIT.fileInTheWay}
    probe=\${probe%/*}; probe=\${probe:-/}
  done
  resolve "$probe"
  [ -d "$real" ] || exit ${FILE_SCRIPT_EXIT.fileInTheWay}
  mkdir -p -- "$dir" || exit 1
  resolve "$dir"
  t=$real/\${t##*/}
  [ -L "$t" ] || break
  hops=$((hops + 1))
  [ "$hops" -le ${MAX_SYMLINK_HOPS} ] || exit ${FILE_SCRIPT_EXIT.tooManyLinks}
  link=$(readlink -- "$t" && echo .) || exit 1
  link=\${link%?.}
  case $link in *"$nl"*) exit ${FILE_SCRIPT_EXIT.newlineName};; esac
  lexical "$link" "$real"
done
[ -d "$t" ] && exit ${FILE_SCRIPT_EXIT.wrongKind}`;

export const FILE_SCRIPTS = {
  /** Prints the file's content. */
  read: `${FIND_FILE}
exec cat -- "$real"`,

  /** Prints the file's real path, a line, for a sandbox that downloads files by path (the hosted providers' file APIs). */
  locate: `${FIND_FILE}
printf '%s\\n' "$real"`,

  /*
   * Prints the existing file's mode, owner and link count (or "new"), then the real path to write,
   * for a sandbox that uploads files by path. A provider's upload opens the file there for writing,
   * so a FIFO (which would block it) or a device is refused, and a file with other names (a hard
   * link) is told apart for the caller to replace rather than write into.
   */
  prepareWrite: `${WRITE_TARGET}
[ -e "$t" ] && [ ! -f "$t" ] && exit ${FILE_SCRIPT_EXIT.notRegularFile}
if [ -f "$t" ]; then stat -c '%a %u %g %h' -- "$t"; else echo new; fi
printf '%s\\n' "$t"`,

  /*
   * Writes stdin to the file, as the user the script runs as, whole: to a fresh name in the same
   * folder, then renamed over the file, so a reader or a write of the same file at the same time
   * sees the old bytes or the new, never a mix, and a write cut short leaves the old bytes (and
   * perhaps a stray .al-write-* file). A file already there keeps its mode, and its owner where
   * this user may give it; one with other names (a hard link) is replaced, so they keep their
   * content, as the local sandbox does. It is written only with the rights writing it in place
   * would need; a folder this user may not write, holding a file it may, is written in place.
   * $2 is the byte count sent, so a stream cut short never passes for the whole file.
   */
  write: `${WRITE_TARGET}
[ -e "$t" ] && [ ! -f "$t" ] && exit ${FILE_SCRIPT_EXIT.notRegularFile}
owner=
if [ -f "$t" ]; then
  [ -w "$t" ] || { printf 'cannot write %s: Permission denied\\n' "$t" >&2; exit 1; }
  mode=$(stat -c %a -- "$t") && owner=$(stat -c %u:%g -- "$t") || exit 1
else
  mode=$(printf %o $((0666 & ~0$(umask))))
fi
if s=$(mktemp "\${t%/*}/.al-write-XXXXXX" 2>/dev/null); then
  trap 'rm -f -- "$s"' EXIT
  cat > "$s" || exit 1
  [ "$(stat -c %s -- "$s")" = "$2" ] || exit ${FILE_SCRIPT_EXIT.shortWrite}
  [ -z "$owner" ] || chown "$owner" -- "$s" 2>/dev/null
  chmod "$mode" -- "$s" && mv -f -- "$s" "$t" || exit 1
  exit 0
fi
[ -f "$t" ] && [ "$(stat -c %h -- "$t")" -eq 1 ] || { printf 'cannot write %s: its folder is not writable\\n' "$t" >&2; exit 1; }
cat > "$t" || exit 1
[ "$(stat -c %s -- "$t")" = "$2" ] || exit ${FILE_SCRIPT_EXIT.shortWrite}`,

  /** Only the parent is resolved: rm removes a symlink itself, never its target. */
  delete: `${HELPERS}
if [ "$1" = /workspace ]; then find /workspace -mindepth 1 -maxdepth 1 -exec rm -rf -- {} +; exit 0; fi
parent=\${1%/*}
[ -e "$parent" ] || { ancestor "$parent"; exit 0; }
resolve "$parent"
[ -d "$real" ] || exit ${FILE_SCRIPT_EXIT.fileInTheWay}
rm -rf -- "$real/\${1##*/}"`,

  /*
   * Prints "kind|size|path" lines, the path relative to the one asked for
   * ("." for itself). A symlink is listed as what it points at when that is
   * under /workspace, and not descended into; find's exit code ends the list.
   */
  list: `${HELPERS}
[ -e "$1" ] || { ancestor "$1"; exit 0; }
resolve "$1"
[ -d "$real" ] || exec stat -L -c '%F|%s|.' -- "$real"
cd -- "$real" || exit 1
{ find . -mindepth 1 \\( -name "*$nl*" -prune \\) -o \\( -type f -o -type d \\) -exec stat -c '%F|%s|%n' -- {} + -o -type l -exec printf 'link|%s\\n' {} +; echo "end|$?"; } |
while IFS= read -r line; do
  case $line in
    'end|'*) exit "\${line#end|}";;
    'link|'*)
      link=\${line#link|}
      target=$(readlink -f -- "$link" && echo .) || continue
      target=\${target%?.}
      case $target in *"$nl"*) continue;; /workspace|/workspace/*) ;; *) continue;; esac
      [ -e "$target" ] && stat -L -c '%F|%s|%n' -- "$link";;
    *) printf '%s\\n' "$line";;
  esac
done`,
} as const;

export type FileScript = keyof typeof FILE_SCRIPTS;
