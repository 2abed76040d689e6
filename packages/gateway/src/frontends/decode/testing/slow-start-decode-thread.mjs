// A decode thread that takes 1.5 s to start (as a replacement thread can on a loaded host), then runs the real one.
// Test fixture for decode-pool.test.ts; runs from the built dist/.
Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1500);
await import(new URL("../../../../dist/frontends/decode/decode-thread.js", import.meta.url).href);
