import { describe, expect, it } from "vitest";
import { LiveList } from "./live-list.js";

describe("LiveList", () => {
  it("adds, removes from any position and iterates what is left, newest first", () => {
    const list = new LiveList<string>();
    const a = list.add("a");
    const b = list.add("b");
    const c = list.add("c");
    expect([...list]).toEqual(["c", "b", "a"]);
    list.remove(b);
    expect([...list]).toEqual(["c", "a"]);
    list.remove(c);
    expect([...list]).toEqual(["a"]);
    list.remove(a);
    expect([...list]).toEqual([]);
    expect(list.size).toBe(0);
  });

  it("forgets a removed value: the entry points at nothing, so a finished request is not kept alive", () => {
    const list = new LiveList<{ body: string }>();
    const first = list.add({ body: "one" });
    const second = list.add({ body: "two" });
    list.remove(first);
    expect(first.value).toBeUndefined();
    expect(first.next).toBeUndefined();
    expect(first.previous).toBeUndefined();
    expect(first.list).toBeUndefined();
    expect(second.next).toBeUndefined();
  });

  it("ignores a second removal and an entry of another list", () => {
    const list = new LiveList<number>();
    const other = new LiveList<number>();
    const one = list.add(1);
    const foreign = other.add(2);
    list.remove(one);
    list.remove(one);
    list.remove(foreign);
    expect(list.size).toBe(0);
    expect([...other]).toEqual([2]);
  });

  it("lets the value being visited be removed while iterating, and clear() empties it", () => {
    const list = new LiveList<number>();
    const entries = [1, 2, 3, 4].map((n) => list.add(n));
    const seen: number[] = [];
    for (const value of list) {
      seen.push(value);
      list.remove(entries[value - 1]!);
    }
    expect(seen).toEqual([4, 3, 2, 1]);
    list.add(5);
    list.add(6);
    list.clear();
    expect([...list]).toEqual([]);
    expect(list.size).toBe(0);
  });
});
