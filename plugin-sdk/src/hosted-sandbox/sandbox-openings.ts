/**
 * Each key's sandbox as it is being opened or is open: concurrent acquires of a
 * key share one opening, and an opening that fails is forgotten so the next
 * acquire tries again.
 */
export class SandboxOpenings<T> {
  private readonly byKey = new Map<string, Promise<T>>();
  private readonly terms = new Map<string, { released: boolean }>();

  /**
   * The key's current term, from its first acquire to its release: a handle opened in it follows
   * its sandbox to the key's next one (SandboxSuccession) only while the term lasts, so a handle
   * kept after the release makes no sandbox that nothing would release.
   */
  term(key: string): { readonly released: boolean } {
    let term = this.terms.get(key);
    if (term === undefined) {
      term = { released: false };
      this.terms.set(key, term);
    }
    return term;
  }

  /** The key was released: its term ends (the next acquire starts another). */
  endTerm(key: string): void {
    const term = this.terms.get(key);
    if (term) term.released = true;
    this.terms.delete(key);
  }

  /** The key's opening, started with `open` when there is none. */
  acquire(key: string, open: () => Promise<T>): Promise<T> {
    return this.byKey.get(key) ?? this.replace(key, open());
  }

  /**
   * The key's opening, as `acquire`, for a provider that can lose a sandbox: one already open before
   * this call is first checked with `stillThere`, and when the provider no longer has it (false) it is
   * forgotten and a new one opened in its place. A sandbox this call opened is not checked.
   */
  async acquireLive(key: string, open: () => Promise<T>, stillThere: (opened: T) => Promise<boolean>): Promise<T> {
    const earlier = this.byKey.get(key);
    const opened = await this.acquire(key, open);
    if (earlier === undefined || (await stillThere(opened))) return opened;
    // Only while it is still the key's: another call may have replaced it meanwhile.
    if (this.byKey.get(key) === earlier) this.byKey.delete(key);
    return this.acquire(key, open);
  }

  /** Make `opening` the key's (a restore, say), forgotten if it fails. */
  replace(key: string, opening: Promise<T>): Promise<T> {
    const remembered: Promise<T> = opening.catch((error: unknown) => {
      // Only while it is still the key's: a release or a restore may have started another since.
      if (this.byKey.get(key) === remembered) this.byKey.delete(key);
      throw error;
    });
    this.byKey.set(key, remembered);
    return remembered;
  }

  /** The key's opening, if any, without starting one. */
  peek(key: string): Promise<T> | undefined {
    return this.byKey.get(key);
  }

  forget(key: string): void {
    this.byKey.delete(key);
  }

  /**
   * Forget the key's opening if it still opens `opened` (the provider no longer has that sandbox),
   * so the next acquire makes a new one instead of handing out the dead one; an opening started
   * since for the key is kept.
   */
  forgetIfOpened(key: string, opened: T): void {
    const pending = this.byKey.get(key);
    void pending?.then(
      (current) => {
        if (current === opened && this.byKey.get(key) === pending) this.byKey.delete(key);
      },
      () => undefined,
    );
  }

  /**
   * Forget the key's opening and wait for it to settle, its outcome ignored: a
   * release or a restore that looks the sandbox up next then finds the one an
   * acquire still in progress was making, instead of leaving it running.
   */
  async settle(key: string): Promise<void> {
    const opening = this.byKey.get(key);
    this.byKey.delete(key);
    await opening?.catch(() => undefined);
  }
}
