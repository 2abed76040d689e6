#!/usr/bin/env node
// A closed-loop gRPC load generator in its own process (so the benchmark's
// orchestration does not share its event loop): one @grpc/grpc-js channel,
// `concurrency` ModelInfer calls always in flight, the request pre-encoded
// once (identity serializers), for `seconds`. Prints one JSON line:
// { requests, seconds, p50Us, p99Us, errors, firstError }.
//
// usage: node grpc-load.mjs <address> <message file> <concurrency> <seconds>
import { readFileSync } from "node:fs";
import * as grpc from "@grpc/grpc-js";

const [address, file, concurrencyText, secondsText] = process.argv.slice(2);
const message = readFileSync(file);
const concurrency = Number(concurrencyText);
const seconds = Number(secondsText);
const client = new grpc.Client(address, grpc.credentials.createInsecure(), {
  "grpc.max_send_message_length": -1,
  "grpc.max_receive_message_length": -1,
});
const identity = (value) => value;

const latencies = [];
let errors = 0;
let firstError;
const call = () =>
  new Promise((resolve) => {
    const started = process.hrtime.bigint();
    client.makeUnaryRequest("/inference.GRPCInferenceService/ModelInfer", identity, identity, message, (error) => {
      if (error) {
        errors += 1;
        firstError ??= `${error.code} ${error.details}`;
      } else latencies.push(Number(process.hrtime.bigint() - started) / 1000);
      resolve();
    });
  });

// Warm-up: a second of calls, not counted.
const warmupEnd = Date.now() + 1000;
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    while (Date.now() < warmupEnd) await call();
  }),
);
latencies.length = 0;
errors = 0;
const started = process.hrtime.bigint();
const end = Date.now() + seconds * 1000;
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    while (Date.now() < end) await call();
  }),
);
const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
latencies.sort((a, b) => a - b);
const at = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN;
process.stdout.write(
  `${JSON.stringify({ requests: latencies.length, seconds: elapsed, p50Us: at(0.5), p99Us: at(0.99), errors, firstError })}\n`,
);
client.close();
process.exit(0);
