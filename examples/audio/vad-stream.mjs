#!/usr/bin/env node
// Streams audio to the `silero_vad` sequence model of a running Operon (or
// Triton) server, 512 samples (32 ms at 16 kHz) per request under one
// correlation id, and prints the speech probability of each chunk. The
// server keeps the model's recurrent state between the requests (implicit
// state), so the client sends only the audio and the sample rate. As
// Silero v5 expects, each request's audio is the chunk with the previous
// chunk's last 64 samples in front (576 samples; zeros before the first).
//
//   npm start                                        # in one terminal
//   node examples/audio/vad-stream.mjs               # examples/audio/hello.wav
//   node examples/audio/vad-stream.mjs speech.wav    # 16 kHz mono 16-bit PCM WAV
//   node examples/audio/vad-stream.mjs --url http://127.0.0.1:8000 --id 42 speech.wav
//
// The first request carries sequence_start, the last sequence_end; a stream
// silent for longer than the model's max_sequence_idle_microseconds (10 s)
// is released by the server. hello.wav ("Hello. This is Operon, streaming
// speech to a stateful model.", 0.5 s of silence around it) was made with
// Debian's espeak-ng and resampled to 16 kHz.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const args = process.argv.slice(2);
let url = "http://127.0.0.1:8000";
let id = 1 + Math.floor(Math.random() * 2 ** 31);
let file;
for (let i = 0; i < args.length; i += 1) {
  if (args[i] === "--url") url = args[++i];
  else if (args[i] === "--id") id = Number(args[++i]);
  else file = args[i];
}

const RATE = 16000;
const CHUNK = 512;
const CONTEXT = 64;
const samples = readWav(file ?? fileURLToPath(new URL("hello.wav", import.meta.url)));
const chunks = Math.floor(samples.length / CHUNK);
for (let index = 0; index < chunks; index += 1) {
  const start = index * CHUNK;
  const chunk = new Float32Array(CONTEXT + CHUNK);
  if (index > 0) chunk.set(samples.subarray(start - CONTEXT, start), 0);
  chunk.set(samples.subarray(start, start + CHUNK), CONTEXT);
  const response = await fetch(`${url.replace(/\/$/, "")}/v2/models/silero_vad/infer`, {
    method: "POST",
    body: JSON.stringify({
      parameters: { sequence_id: id, sequence_start: index === 0, sequence_end: index === chunks - 1 },
      inputs: [
        { name: "input", datatype: "FP32", shape: [1, CONTEXT + CHUNK], data: Array.from(chunk) },
        { name: "sr", datatype: "INT64", shape: [], data: [RATE] },
      ],
    }),
  });
  const body = await response.json();
  if (response.status !== 200) {
    console.error(`error ${response.status}: ${body.error}`);
    process.exit(1);
  }
  const probability = body.outputs[0].data[0];
  const at = ((index * CHUNK) / RATE).toFixed(2).padStart(5);
  console.log(`${at} s  ${probability.toFixed(3)}  ${"#".repeat(Math.round(probability * 40))}`);
}

/** The samples of a 16 kHz mono 16-bit PCM WAV file, as floats in [-1, 1). */
function readWav(path) {
  const bytes = readFileSync(path);
  if (bytes.toString("ascii", 0, 4) !== "RIFF" || bytes.toString("ascii", 8, 12) !== "WAVE")
    throw new Error(`${path}: not a WAV file`);
  let at = 12;
  let format;
  while (at + 8 <= bytes.length) {
    const id = bytes.toString("ascii", at, at + 4);
    const size = bytes.readUInt32LE(at + 4);
    if (id === "fmt ") {
      format = { pcm: bytes.readUInt16LE(at + 8), channels: bytes.readUInt16LE(at + 10), rate: bytes.readUInt32LE(at + 12), bits: bytes.readUInt16LE(at + 22) };
    } else if (id === "data") {
      if (format === undefined || format.pcm !== 1 || format.channels !== 1 || format.rate !== RATE || format.bits !== 16)
        throw new Error(`${path}: need 16 kHz mono 16-bit PCM, got ${JSON.stringify(format)}`);
      const data = bytes.subarray(at + 8, at + 8 + size);
      const out = new Float32Array(data.length >> 1);
      for (let i = 0; i < out.length; i += 1) out[i] = data.readInt16LE(i * 2) / 32768;
      return out;
    }
    at += 8 + size + (size & 1);
  }
  throw new Error(`${path}: no data chunk`);
}
