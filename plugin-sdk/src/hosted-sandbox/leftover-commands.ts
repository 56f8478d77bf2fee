import { randomBytes } from "node:crypto";

/** Where each running script's pid file is, inside the sandbox. */
export const PID_DIR = "/tmp/.assembly-line";

/*
 * The provider offers no way to list and stop the commands an earlier process
 * started, so each script records its shell's pid with the process's start
 * time (a pid alone may name another process after a restart) and removes the
 * file when it exits. Killing the shell's tree stops the command, its children
 * and its watchdog; each process is stopped before its children are killed, so
 * a shell never runs its next command (`sleep 5; echo done > file`) in between.
 */
const KILL_TREE =
  'al_stop_tree() { kill -STOP "$1" 2>/dev/null; for al_child in $(grep -l "^PPid:[[:space:]]*$1\\$" /proc/[0-9]*/status 2>/dev/null | cut -d/ -f3); do al_stop_tree "$al_child"; done; kill -KILL "$1" 2>/dev/null; }';

/** Every pid file left belongs to a script some earlier process started and never saw end (it crashed, or lost the run). */
export const KILL_LEFTOVERS = [
  KILL_TREE,
  `for al_file in ${PID_DIR}/*.pid; do`,
  '  [ -f "$al_file" ] || continue',
  '  set -- $(cat "$al_file" 2>/dev/null)',
  '  case "$1" in',
  "    ''|1|*[!0-9]*) ;;",
  `    *) if [ "$1" != "$$" ] && [ -n "$2" ] && [ "$(cut -d' ' -f22 "/proc/$1/stat" 2>/dev/null)" = "$2" ]; then al_stop_tree "$1"; fi ;;`,
  "  esac",
  '  rm -f "$al_file"',
  "done",
  "exit 0",
].join("\n");

/** `script`, recording its shell's pid and start time while it runs. */
export function tracked(script: string): string {
  const file = `${PID_DIR}/exec-${randomBytes(8).toString("hex")}.pid`;
  return [
    `mkdir -p ${PID_DIR} 2>/dev/null; echo "$$ $(cut -d' ' -f22 /proc/$$/stat 2>/dev/null)" > ${file} 2>/dev/null; trap 'rm -f ${file}' EXIT`,
    script,
  ].join("\n");
}
