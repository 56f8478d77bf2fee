/**
 * Each key's sandbox as it is being opened or is open: concurrent acquires of a
 * key share one opening, and an opening that fails is forgotten so the next
 * acquire tries again.
 */
export class SandboxOpenings<T> {
  private readonly byKey = new Map<string, Promise<T>>();

  /** The key's opening, started with `open` when there is none. */
  acquire(key: string, open: () => Promise<T>): Promise<T> {
    return this.byKey.get(key) ?? this.replace(key, open());
  }

  /** Make `opening` the key's (a restore, say), forgotten if it fails. */
  replace(key: string, opening: Promise<T>): Promise<T> {
    const remembered = opening.catch((error: unknown) => {
      this.byKey.delete(key);
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
}
