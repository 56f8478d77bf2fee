import { AssemblyLineError, errorSummary } from "../errors.js";
import type { Sandbox } from "../sandbox.js";
import type { SandboxOpenings } from "./sandbox-openings.js";
import { ShellSandbox, type SandboxDriver, type ShellSandboxDefaults } from "./shell-sandbox.js";

/**
 * What a sandbox handle's calls go to once the provider no longer has its
 * sandbox (killed, deleted, its lifetime over): the key's next sandbox. The
 * runtime holds one handle for a whole drive of a run, so without this every
 * call after the loss would fail until the run's next drive. The call that
 * found the sandbox gone fails; the ones after it run in the new sandbox.
 */
export class SandboxSuccession {
  private ended = false;
  private successor: Promise<SandboxDriver | undefined> | undefined;

  /**
   * `next`: the key's next sandbox's driver (the adapter's acquire), or undefined when it hands back
   * this same sandbox. `term`: the key's term the handle was opened in (SandboxOpenings.term); once
   * it is released, a call finding the sandbox gone makes no new one.
   */
  constructor(
    private readonly next: () => Promise<SandboxDriver | undefined>,
    private readonly term?: { readonly released: boolean },
  ) {}

  /** The provider no longer has the sandbox: later calls go to the key's next one. */
  end(): void {
    this.ended = true;
  }

  /** `own`, whose calls go to the key's next sandbox once `end` was called. */
  driver(own: SandboxDriver): SandboxDriver {
    const call = async <T>(operation: (driver: SandboxDriver) => Promise<T>): Promise<T> => {
      if (this.ended) return operation((await this.following()) ?? own);
      try {
        return await operation(own);
      } catch (error) {
        // This call found the sandbox gone: its error says what that means for the run's files.
        throw this.ended ? lost(error) : error;
      }
    };
    return {
      runScript: (script, limitMs) => call((driver) => driver.runScript(script, limitMs)),
      downloadFile: (path) => call((driver) => driver.downloadFile(path)),
      uploadFile: (path, content) => call((driver) => driver.uploadFile(path, content)),
    };
  }

  /** The next sandbox's driver, opened once for the calls that need it; a failed opening is tried again by the next call. */
  private following(): Promise<SandboxDriver | undefined> {
    if (this.term?.released) {
      return Promise.reject(
        new AssemblyLineError("AL_ERR_SANDBOX_UNAVAILABLE", "this sandbox was released, and its handle makes no new one: nothing would release it", {
          fix: "Use the sandbox of a run only while the run holds it (ctx.getSandbox() in a tool call); acquire the key again for new work.",
          details: { released: true },
        }),
      );
    }
    const opening = (this.successor ??= this.next().then(
      (driver) => {
        if (!driver && this.successor === opening) this.successor = undefined;
        return driver;
      },
      (error: unknown) => {
        if (this.successor === opening) this.successor = undefined;
        throw error;
      },
    ));
    return opening;
  }
}

/** A call's failure on a sandbox the provider no longer has, saying its files are gone and the next call starts afresh. */
function lost(error: unknown): unknown {
  if (!(error instanceof AssemblyLineError)) return error;
  return new AssemblyLineError(error.code, `${errorSummary(error)} (the sandbox no longer exists, and its files with it: the next call starts a new, empty sandbox)`, {
    fix: "Write again, in the new sandbox, the files the run still needs.",
    details: { ...error.details, sandboxGone: true },
  });
}

/** Each sandbox successiveSandbox made, with the driver a handle whose own sandbox is gone hands its calls to. */
const successorDrivers = new WeakMap<ShellSandbox, SandboxDriver>();

/**
 * A hosted adapter's handle of `key`'s sandbox that outlives the sandbox: once the provider no
 * longer has it (the driver calls `gone`), the key's opening is forgotten, so the next acquire makes
 * a new one, and the handle's next calls go to the key's next sandbox (SandboxSuccession), for as
 * long as the key's term lasts (SandboxOpenings.term). Returns the handle and its `gone`, for an
 * adapter that finds the sandbox gone itself (at a later acquire).
 */
export function successiveSandbox(parts: {
  key: string;
  /** Names the provider in errors, e.g. "Daytona". */
  provider: string;
  defaults: ShellSandboxDefaults;
  openings: SandboxOpenings<ShellSandbox>;
  /** The adapter's acquire of the key: its next sandbox. */
  acquire: () => Promise<Sandbox>;
  /** The provider's driver of this sandbox, which calls `gone` when it finds the provider no longer has it. */
  driver: (gone: () => void) => SandboxDriver;
}): { sandbox: ShellSandbox; gone: () => void } {
  const { key, openings } = parts;
  const succession = new SandboxSuccession(async (): Promise<SandboxDriver | undefined> => {
    const next = (await parts.acquire()) as ShellSandbox;
    return next === sandbox ? undefined : successorDrivers.get(next);
  }, openings.term(key));
  const gone = () => {
    succession.end();
    openings.forgetIfOpened(key, sandbox);
  };
  const driver: SandboxDriver = succession.driver(parts.driver(gone));
  const sandbox: ShellSandbox = new ShellSandbox(key, driver, parts.defaults, parts.provider);
  successorDrivers.set(sandbox, driver);
  return { sandbox, gone };
}
