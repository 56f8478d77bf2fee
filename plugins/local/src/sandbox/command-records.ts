import { mkdir, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";

/*
 * Each running command's process group, recorded as <folder>/<pgid>.json while it
 * runs. A host killed mid-command (SIGKILL, power loss) never sees the command
 * end and never enforces its timeout; the records let the next process that
 * opens or releases the same sandbox stop what it left running.
 *
 * A pid is reused once its process is gone, so a record also holds the leader's
 * start time (/proc/<pid>/stat, field 22): a group is killed only while its
 * leader is the very process that was recorded. Where /proc is missing (not
 * Linux) nothing can be checked and leftovers are not stopped.
 */

interface CommandRecord {
  /** The shell's pid, which is also its process group id (it is spawned as a group leader). */
  pgid: number;
  /** Clock ticks from boot to the shell's start. */
  startTime: string;
}

export class CommandRecords {
  constructor(private readonly folder: string) {}

  /** Note a command's group while it runs. Best effort: a record that cannot be written only loses the stop after a crash. */
  async add(pgid: number): Promise<void> {
    const startTime = await processStartTime(pgid);
    if (startTime === undefined) return;
    try {
      await mkdir(this.folder, { recursive: true });
      const record: CommandRecord = { pgid, startTime };
      await writeFile(this.fileOf(pgid), JSON.stringify(record));
    } catch {
      // Disk full, or the sandbox released meanwhile.
    }
  }

  /** The command ended and its group was killed: nothing to stop later. */
  async remove(pgid: number): Promise<void> {
    await rm(this.fileOf(pgid), { force: true }).catch(() => undefined);
  }

  /** SIGKILL every recorded group whose leader still runs as the recorded process; the records go either way. */
  async killLeftovers(): Promise<void> {
    const names = await readdir(this.folder).catch(() => [] as string[]);
    for (const name of names) {
      const file = join(this.folder, name);
      const record = parseRecord(await readFile(file, "utf8").catch(() => ""));
      if (record !== undefined && (await processStartTime(record.pgid)) === record.startTime) {
        try {
          process.kill(-record.pgid, "SIGKILL");
        } catch {
          // ESRCH: it ended between the check and the kill.
        }
      }
      await rm(file, { force: true }).catch(() => undefined);
    }
  }

  private fileOf(pgid: number): string {
    return join(this.folder, `${pgid}.json`);
  }
}

/** Field 22 of /proc/<pid>/stat, read after the command name (which may hold spaces and parentheses); undefined when the process is gone or there is no /proc. */
export async function processStartTime(pid: number): Promise<string | undefined> {
  const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => undefined);
  if (stat === undefined) return undefined;
  // The first field after the name is field 3. A zombie still holds its pid, so its start time still proves its group.
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
}

function parseRecord(text: string): CommandRecord | undefined {
  try {
    const record = JSON.parse(text) as Partial<CommandRecord>;
    if (typeof record.pgid === "number" && Number.isInteger(record.pgid) && record.pgid > 1 && typeof record.startTime === "string") return record as CommandRecord;
  } catch {
    // A record cut short by a crash while it was written: nothing to check it against.
  }
  return undefined;
}
