/*
 * File operations check paths inside the sandbox with small POSIX shell
 * scripts (busybox and coreutils both suffice), the path passed as an argument,
 * never spliced into the script. `inside` resolves symlinks with readlink -f and
 * refuses anything that lands outside /workspace. Exit codes: 2 missing,
 * 3 wrong kind, 4 escape. `read` prints the real path the provider's file API
 * then reads; `prepareWrite` prints an existing file's mode (or "new"), then the
 * real path to write: a symlink's target, as writing through a link does. The
 * deepest existing folder is checked before `mkdir -p`, which would otherwise
 * create folders outside /workspace through a symlink before the refusal.
 */
const INSIDE = 'inside() { case "$1" in /workspace|/workspace/*) return 0;; *) return 1;; esac; }';

export const FILE_SCRIPTS = {
  read: `${INSIDE}
[ -e "$1" ] || exit 2
real=$(readlink -f -- "$1") && inside "$real" || exit 4
[ -f "$real" ] || exit 3
printf '%s\\n' "$real"`,
  prepareWrite: `${INSIDE}
parent=$(dirname -- "$1")
probe=$parent
while [ ! -e "$probe" ] && [ ! -L "$probe" ]; do probe=$(dirname -- "$probe"); done
real=$(readlink -f -- "$probe") && inside "$real" || exit 4
mkdir -p -- "$parent" 2>/dev/null
real=$(readlink -f -- "$parent") && inside "$real" || exit 4
target="$real/\${1##*/}"
if [ -L "$1" ]; then target=$(readlink -f -- "$1") && inside "$target" || exit 4; fi
[ -d "$target" ] && exit 3
if [ -f "$target" ]; then stat -c '%a' -- "$target"; else echo new; fi
printf '%s\\n' "$target"`,
  /** Give a file the mode it had before an upload replaced it. */
  restoreMode: `chmod "$2" -- "$1"`,
  delete: `${INSIDE}
if [ "$1" = /workspace ]; then find /workspace -mindepth 1 -maxdepth 1 -exec rm -rf -- {} +; exit 0; fi
parent=$(readlink -f -- "$(dirname -- "$1")") || exit 0
inside "$parent" || exit 4
rm -rf -- "$parent/$(basename -- "$1")"`,
  list: `${INSIDE}
[ -e "$1" ] || exit 0
real=$(readlink -f -- "$1") && inside "$real" || exit 0
if [ -d "$real" ]; then find "$real" -mindepth 1 \\( -type f -o -type d \\) -exec stat -c '%F|%s|%n' -- {} +; else stat -c '%F|%s|%n' -- "$real"; fi`,
  /** Run once when a sandbox is created: the workspace folder, owned by whoever commands run as. */
  prepareWorkspace: `mkdir -p /workspace 2>/dev/null && [ -w /workspace ] && exit 0
command -v sudo >/dev/null 2>&1 && sudo -n mkdir -p /workspace && sudo -n chown "$(id -u):$(id -g)" /workspace && exit 0
exit 5`,
} as const;

export type FileScript = keyof typeof FILE_SCRIPTS;

export type Entry = { path: string; type: "file" | "directory"; size: number };

/** `stat -c '%F|%s|%n'` lines as entries, sorted by path. */
export function parseListing(output: string): Entry[] {
  const entries: Entry[] = [];
  for (const line of output.split("\n")) {
    const match = /^([^|]+)\|(\d+)\|(\/workspace\/.*)$/.exec(line);
    if (!match) continue;
    const [, kind, size, entryPath] = match as unknown as [string, string, string, string];
    if (kind === "directory") entries.push({ path: entryPath, type: "directory", size: 0 });
    else if (kind.startsWith("regular")) entries.push({ path: entryPath, type: "file", size: Number(size) });
  }
  return entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}
