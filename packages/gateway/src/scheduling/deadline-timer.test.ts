import { describe, expect, it } from "vitest";
import { DeadlineTimer } from "./deadline-timer.js";
import { FakeClock } from "./testing/fake-clock.js";

const US = 1_000n;
const MS = 1_000_000n;

describe("DeadlineTimer", () => {
  it("fires a 100 µs deadline on the first event-loop turn after it, not after a millisecond", () => {
    const clock = new FakeClock();
    const fired: bigint[] = [];
    const timer = new DeadlineTimer(() => fired.push(clock.now()), clock);
    timer.arm(100n * US);
    expect(clock.timeoutsAsked).toEqual([]); // no setTimeout: it would round up to 1 ms
    clock.advance(60n * US);
    expect(fired).toEqual([]);
    clock.advance(50n * US);
    expect(fired).toEqual([110n * US]);
    expect(timer.deadline).toBeUndefined();
  });

  it("sleeps in setTimeout while the deadline is far, then checks every turn", () => {
    const clock = new FakeClock();
    const fired: bigint[] = [];
    const timer = new DeadlineTimer(() => fired.push(clock.now()), clock);
    timer.arm(10n * MS);
    expect(clock.timeoutsAsked).toEqual([8]);
    expect(clock.pendingImmediates).toBe(0);
    clock.advance(9n * MS);
    expect(fired).toEqual([]);
    expect(clock.pendingImmediates).toBe(1);
    clock.advance(990n * US);
    expect(fired).toEqual([]);
    clock.advance(20n * US);
    expect(fired).toEqual([10n * MS + 10n * US]);
  });

  it("keeps the earlier of two deadlines and forgets a cleared one", () => {
    const clock = new FakeClock();
    let count = 0;
    const timer = new DeadlineTimer(() => (count += 1), clock);
    timer.arm(500n * US);
    timer.arm(900n * US);
    expect(timer.deadline).toBe(500n * US);
    timer.arm(200n * US);
    expect(timer.deadline).toBe(200n * US);
    clock.advance(250n * US);
    expect(count).toBe(1);
    timer.arm(400n * US);
    timer.clear();
    clock.advance(1n * MS);
    expect(count).toBe(1);
  });

  it("fires at once for a deadline already past", () => {
    const clock = new FakeClock();
    clock.advance(5n * MS);
    let count = 0;
    new DeadlineTimer(() => (count += 1), clock).arm(1n * MS);
    expect(count).toBe(1);
  });
});
