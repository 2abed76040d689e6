/**
 * The requests (or bodies, or calls) a frontend has in flight, as a set
 * that forgets what it held: entries are nodes of a doubly linked list, and
 * removing one clears every link and its value.
 *
 * Why not a `Set`: a Set with one add and one delete per request rehashes
 * its table every few dozen requests, and V8 leaves the obsolete table's
 * entries in it (iterators still walking it follow it to the new one). Once
 * a long-lived Set's table is in the old generation, every obsolete table is
 * dead but uncollected old memory that still points at the requests it held,
 * so each scavenge keeps those requests, and everything they reference,
 * alive and promotes them, until the next full collection. Under wrk that was
 * most of each HTTP request's objects promoted (`bench/gc-survivors.mjs`),
 * scavenges several times dearer than a minimal server's, and major
 * collections the minimal server never needs. A removed node here points at
 * nothing, so a dead request stays dead.
 */
export class LiveList<T> {
  private head: LiveEntry<T> | undefined;
  private count = 0;

  /** Adds `value`; keep the entry to remove it (O(1)). */
  add(value: T): LiveEntry<T> {
    const entry = new LiveEntry<T>(this, value, this.head);
    if (this.head !== undefined) this.head.previous = entry;
    this.head = entry;
    this.count++;
    return entry;
  }

  /** Removes the entry; removing one twice, or one of another list, is a no-op. */
  remove(entry: LiveEntry<T>): void {
    if (entry.list !== this) return;
    const { previous, next } = entry;
    if (previous !== undefined) previous.next = next;
    else this.head = next;
    if (next !== undefined) next.previous = previous;
    entry.previous = undefined;
    entry.next = undefined;
    entry.value = undefined;
    entry.list = undefined;
    this.count--;
  }

  get size(): number {
    return this.count;
  }

  /** The values, newest first. Removing the current value while iterating is allowed. */
  *[Symbol.iterator](): IterableIterator<T> {
    let entry = this.head;
    while (entry !== undefined) {
      const next = entry.next;
      yield entry.value as T;
      entry = next;
    }
  }

  /** Removes every entry. */
  clear(): void {
    let entry = this.head;
    while (entry !== undefined) {
      const next = entry.next;
      this.remove(entry);
      entry = next;
    }
  }
}

export class LiveEntry<T> {
  previous: LiveEntry<T> | undefined = undefined;

  constructor(
    public list: LiveList<T> | undefined,
    public value: T | undefined,
    public next: LiveEntry<T> | undefined,
  ) {}
}
