import { describe, expect, it } from "vitest";
import { CircuitBreaker, type BreakerState } from "./circuit-breaker.js";

describe("CircuitBreaker", () => {
  const make = (settings: Partial<ConstructorParameters<typeof CircuitBreaker>[0]> = {}) => {
    let now = 0;
    const states: BreakerState[] = [];
    const breaker = new CircuitBreaker(
      { failureThreshold: 3, windowMs: 1000, openMs: 500, halfOpenProbes: 1, ...settings },
      { now: () => now, onState: (state) => states.push(state) },
    );
    return { breaker, states, advance: (ms: number) => void (now += ms) };
  };

  it("opens after N failures within the window, not when they are spread wider", () => {
    const { breaker, advance } = make();
    breaker.failed("call");
    advance(600);
    breaker.failed("call");
    advance(600); // the first failure left the window
    breaker.failed("call");
    expect(breaker.state).toBe("closed");
    breaker.failed("call");
    expect(breaker.state).toBe("open");
    expect(breaker.admit()).toBe("rejected");
    breaker.stop();
  });

  it("turns half-open after openMs, lets probes through one at a time, closes on a probe's success", () => {
    const { breaker, states, advance } = make();
    for (let i = 0; i < 3; i += 1) breaker.failed("call");
    advance(499);
    expect(breaker.admit()).toBe("rejected");
    advance(1);
    expect(breaker.admit()).toBe("probe");
    expect(breaker.admit()).toBe("rejected"); // one probe at a time
    breaker.succeeded("probe");
    expect(breaker.state).toBe("closed");
    expect(states).toEqual(["open", "half-open", "closed"]);
    // Past failures are forgotten: it takes N new ones to open again.
    breaker.failed("call");
    breaker.failed("call");
    expect(breaker.state).toBe("closed");
  });

  it("opens again when a probe fails; an abandoned probe frees its slot", () => {
    const { breaker, advance } = make({ halfOpenProbes: 1 });
    for (let i = 0; i < 3; i += 1) breaker.failed("call");
    advance(500);
    expect(breaker.admit()).toBe("probe");
    breaker.abandoned("probe");
    expect(breaker.admit()).toBe("probe");
    breaker.failed("probe");
    expect(breaker.state).toBe("open");
    advance(500);
    expect(breaker.state).toBe("half-open");
    breaker.stop();
  });

  it("a success while closed does not reset the window; a client's error is not a failure (the caller decides)", () => {
    const { breaker } = make();
    breaker.failed("call");
    breaker.succeeded("call");
    breaker.failed("call");
    breaker.failed("call");
    expect(breaker.state).toBe("open");
    breaker.stop();
  });
});
