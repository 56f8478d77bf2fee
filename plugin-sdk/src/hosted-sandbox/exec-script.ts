import { randomBytes } from "node:crypto";
import { FOLDER_REFUSALS, type FolderRefusal } from "./folder-refusal.js";

/** Exit code of a command stopped at its timeout (as coreutils `timeout` and the other sandboxes report). */
export const TIMEOUT_EXIT_CODE = 124;

export interface ScriptRequest {
  /** A shell script run by `sh -c`, with `args` as its positional parameters. */
  script: string;
  args?: string[];
  cwd: string;
  env: Record<string, string>;
  timeoutMs: number;
  maxOutputBytes: number;
}

export interface ScriptResult {
  /** Set when the command never started: its folder could not be entered. */
  folderRefusal?: FolderRefusal;
  /** With folderRefusal "missing": /workspace itself is gone (a command removed it). */
  workspaceMissing?: boolean;
  exitCode: number;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  truncated: boolean;
}

/** A shell word that means exactly `value`. */
export function quote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/*
 * The provider runs one command and hands back its output. The wrapper makes
 * that one command keep the sandbox contract itself, inside the sandbox: the
 * command's stdout and stderr go to separate files, a watchdog kills its whole
 * process tree at the timeout (found through /proc, so no procps is needed), and only the first maxOutputBytes of each stream come
 * back, framed by a random boundary with the exit code and the full sizes.
 */
const KILL_TREE =
  // A process is killed before its children (listed first), so a watchdog killed early never goes on to its next step.
  'al_kill_tree() { al_kids=$(grep -l "^PPid:[[:space:]]*$1\\$" /proc/[0-9]*/status 2>/dev/null | cut -d/ -f3); kill -KILL "$1" 2>/dev/null; for al_kid in $al_kids; do al_kill_tree "$al_kid"; done; }';
/*
 * The command runs as the leader of a process group of its own (under
 * `setsid` where the image has it): that group reaches what it left running in the
 * background, a double fork (`(sleep 99 &)`) included, which the tree walk
 * misses. The group is stopped, the tree killed, then the group. busybox kill
 * reads "--" as a pid: the group is named "-PID" straight after the signal.
 */
const KILL_COMMAND = 'al_kill_command() { kill -STOP "-$1" 2>/dev/null; al_kill_tree "$1"; kill -KILL "-$1" 2>/dev/null; }';

/*
 * `head -c` of a file, cut back to the end of its last whole UTF-8 character when the file is
 * longer than the cap, as utf8Boundary (../text.ts) cuts the Docker and local sandboxes' output:
 * the provider decodes what it hands back, so half a character would come back as U+FFFD. The
 * last bytes kept are read as numbers with od; without od the cut stays where head puts it.
 */
const HEAD_WHOLE_CHARACTERS =
  'al_head() { al_file=$1; al_keep=$2; if [ "$(wc -c < "$al_file")" -gt "$al_keep" ]; then set -- $(head -c "$al_keep" "$al_file" | tail -c 4 | od -An -v -tu1); al_i=$#; al_back=0; while [ "$al_i" -gt 0 ]; do eval "al_byte=\\${$al_i}"; [ $((al_byte & 192)) -eq 128 ] || break; al_i=$((al_i - 1)); al_back=$((al_back + 1)); done; if [ "$al_i" -gt 0 ]; then eval "al_lead=\\${$al_i}"; al_width=1; [ "$al_lead" -ge 192 ] && al_width=2; [ "$al_lead" -ge 224 ] && al_width=3; [ "$al_lead" -ge 240 ] && al_width=4; [ $((al_back + 1)) -ge "$al_width" ] || al_keep=$((al_keep - al_back - 1)); fi; fi; head -c "$al_keep" "$al_file"; }';

/** What the wrapper reports, in place of a folder refusal, when /workspace itself is gone. */
const WORKSPACE_MISSING = "workspace-missing";

/** The wrapper script for one request, and the boundary its output is framed with. */
export function wrapScript(request: ScriptRequest, boundary = randomBytes(12).toString("hex")): { script: string; boundary: string } {
  const exports = Object.entries(request.env).map(([name, value]) => `export ${name}=${quote(value)}`);
  const seconds = Math.max(request.timeoutMs, 1) / 1000;
  const inner = ["sh", "-c", request.script, "sh", ...(request.args ?? [])].map(quote).join(" ");
  const refuse = (why: FolderRefusal | typeof WORKSPACE_MISSING) => `{ printf '%s ${why} 0 0\\n%s\\n' ${boundary} ${boundary}; rm -rf "$al_dir"; exit 0; }`;
  const script = [
    // The provider returns the wrapper's own stderr mixed into its output: keep it quiet.
    "exec 2>/dev/null",
    KILL_TREE,
    KILL_COMMAND,
    HEAD_WHOLE_CHARACTERS,
    `al_dir=$(mktemp -d) || { printf '%s\\n' 'could not make a temporary folder'; exit 0; }`,
    // A missing /workspace is told apart, so the sandbox can make it again.
    `if ! cd ${quote(request.cwd)}; then if [ ! -d /workspace ]; then ${refuse(WORKSPACE_MISSING)}; elif [ -d ${quote(request.cwd)} ]; then ${refuse("unusable")}; elif [ -e ${quote(request.cwd)} ]; then ${refuse("not-a-folder")}; else ${refuse("missing")}; fi; fi`,
    // The sentinel keeps a trailing newline $(...) would drop: a folder "/workspace<newline>" is outside.
    ...(request.cwd === "/workspace" || request.cwd.startsWith("/workspace/") ? [`al_pwd=$(pwd -P && echo .); case "\${al_pwd%?.}" in /workspace|/workspace/*) ;; *) ${refuse("outside")};; esac`] : []),
    // Under job control (`$-` has m) a background job already leads its own group, and setsid would fork and leave `wait` nothing to wait for.
    "al_setsid=; al_group=; case $- in *m*) al_group=1;; *) command -v setsid >/dev/null && al_setsid=setsid && al_group=1;; esac",
    `( ${exports.join("; ")}${exports.length ? "; " : ""}exec $al_setsid ${inner} ) </dev/null >"$al_dir/out" 2>"$al_dir/err" &`,
    "al_pid=$!",
    `( sleep ${seconds.toFixed(3)}; : > "$al_dir/timed-out"; al_kill_command "$al_pid" ) </dev/null >/dev/null 2>&1 &`,
    "al_watch=$!",
    'wait "$al_pid"; al_code=$?',
    // A watchdog that fired is left to finish killing the tree; one that did not is stopped.
    'if [ -e "$al_dir/timed-out" ]; then wait "$al_watch"; al_code=timeout; else al_kill_tree "$al_watch"; fi',
    // What the command left running in its group ends with it, as in the other sandboxes (the group outlives its leader while it has members, so its id is not reused).
    '[ -n "$al_group" ] && kill -KILL "-$al_pid" 2>/dev/null',
    `printf '%s %s %s %s\\n' ${boundary} "$al_code" "$(wc -c < "$al_dir/out")" "$(wc -c < "$al_dir/err")"`,
    `al_head "$al_dir/out" ${request.maxOutputBytes}`,
    `printf '%s\\n' ${boundary}`,
    `al_head "$al_dir/err" ${request.maxOutputBytes}`,
    'rm -rf "$al_dir"',
  ].join("\n");
  return { script, boundary };
}

/** The framed output back as a result; undefined when the wrapper never ran (no shell, no such folder). */
export function parseWrapped(output: string, boundary: string, maxOutputBytes: number): ScriptResult | undefined {
  const header = new RegExp(`(?:^|\\n)${boundary} (\\d+|timeout|${[...FOLDER_REFUSALS, WORKSPACE_MISSING].join("|")}) \\s*(\\d+) \\s*(\\d+)\\n`).exec(output);
  if (!header) return undefined;
  const [, code, outSize, errSize] = header as unknown as [string, string, string, string];
  if (code === WORKSPACE_MISSING) return { folderRefusal: "missing", workspaceMissing: true, exitCode: 1, stdout: "", stderr: "", timedOut: false, truncated: false };
  if ((FOLDER_REFUSALS as readonly string[]).includes(code)) return { folderRefusal: code as FolderRefusal, exitCode: 1, stdout: "", stderr: "", timedOut: false, truncated: false };
  const rest = output.slice(header.index + header[0].length);
  const split = rest.lastIndexOf(`${boundary}\n`);
  if (split < 0) return undefined;
  const stdout = rest.slice(0, split);
  const stderr = rest.slice(split + boundary.length + 1);
  const timedOut = code === "timeout";
  return {
    exitCode: timedOut ? TIMEOUT_EXIT_CODE : Number(code),
    stdout,
    stderr,
    timedOut,
    truncated: Number(outSize) > maxOutputBytes || Number(errSize) > maxOutputBytes,
  };
}
