#!/usr/bin/env python3
"""Independent gRPC client for Operon's sequence batcher, as a Triton user writes it.

Streams audio chunks to a stateful model over ModelStreamInfer (one
bidirectional stream, one sequence, uint64 correlation id beyond 2^53,
sequence_start on the first chunk and sequence_end on the last), sending
only "input" and "sr": the server keeps the recurrent state. Then calls a
model whose CONTROL_SEQUENCE_CORRID is a string with unary ModelInfer and a
string sequence_id. Prints one JSON object; e2e/sequence-batching.test.ts
compares it with ONNX Runtime run in process chunk by chunk.

Usage: sequence_stream_check.py HOST:PORT AUDIO_MODEL CHUNKS_JSON PROBE_MODEL
  CHUNKS_JSON: a file with a list of chunks, each a list of 512 floats.
Needs (Debian): python3-grpcio python3-grpc-tools python3-numpy
"""

import importlib
import json
import os
import shutil
import sys
import tempfile

import grpc
import numpy as np
from grpc_tools import protoc

PROTO_DIR = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "packages", "protocol", "proto"))
PROTOS = ["grpc_service.proto", "model_config.proto", "health.proto"]

SEQUENCE_ID = 2**60 + 7  # beyond 2^53: survives only as a real uint64


def generate_stubs(out_dir):
    args = ["grpc_tools.protoc", "-I" + PROTO_DIR, "--python_out=" + out_dir, "--grpc_python_out=" + out_dir] + PROTOS
    if protoc.main(args) != 0:
        raise SystemExit("grpc_tools.protoc failed to generate stubs from " + PROTO_DIR)
    sys.path.insert(0, out_dir)
    return importlib.import_module("grpc_service_pb2"), importlib.import_module("grpc_service_pb2_grpc")


def chunk_request(pb, model, chunk, index, last):
    request = pb.ModelInferRequest(model_name=model, id="chunk-%d" % index)
    request.parameters["sequence_id"].uint64_param = SEQUENCE_ID
    request.parameters["sequence_start"].bool_param = index == 0
    request.parameters["sequence_end"].bool_param = last
    audio = request.inputs.add(name="input", datatype="FP32", shape=[1, 512])
    sr = request.inputs.add(name="sr", datatype="INT64", shape=[])
    del audio, sr
    request.raw_input_contents.append(np.asarray(chunk, dtype=np.float32).reshape(1, 512).tobytes())
    request.raw_input_contents.append(np.asarray(16000, dtype=np.int64).tobytes())
    return request


def main():
    if len(sys.argv) < 5:
        raise SystemExit("usage: sequence_stream_check.py HOST:PORT AUDIO_MODEL CHUNKS_JSON PROBE_MODEL")
    address, model, chunks_file, probe = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
    with open(chunks_file) as handle:
        chunks = json.load(handle)
    stub_dir = tempfile.mkdtemp(prefix="operon-py-stubs-")
    try:
        pb, pb_grpc = generate_stubs(stub_dir)
        with grpc.insecure_channel(address) as channel:
            stub = pb_grpc.GRPCInferenceServiceStub(channel)
            requests = [chunk_request(pb, model, chunk, i, i == len(chunks) - 1) for i, chunk in enumerate(chunks)]
            streamed = []
            for response in stub.ModelStreamInfer(iter(requests), timeout=60):
                if response.error_message:
                    streamed.append({"error": response.error_message})
                    continue
                infer = response.infer_response
                names = [output.name for output in infer.outputs]
                probability = np.frombuffer(infer.raw_output_contents[names.index("output")], dtype=np.float32)
                streamed.append({"id": infer.id, "outputs": names, "probability": float(probability[0])})

            # The same id after its END: refused, saying the sequence needs a START.
            after_end = None
            try:
                stub.ModelInfer(chunk_request(pb, model, chunks[0], 1, False), timeout=20)
            except grpc.RpcError as error:
                after_end = {"code": error.code().name, "details": error.details()}

            # String correlation ids with unary ModelInfer.
            probe_results = []
            for step, (start, end) in enumerate([(True, False), (False, True)]):
                request = pb.ModelInferRequest(model_name=probe)
                request.parameters["sequence_id"].string_param = "caller-\u00e9-42"
                request.parameters["sequence_start"].bool_param = start
                request.parameters["sequence_end"].bool_param = end
                request.inputs.add(name="INPUT", datatype="FP32", shape=[1, 1])
                request.raw_input_contents.append(np.asarray([[step + 1.5]], dtype=np.float32).tobytes())
                response = stub.ModelInfer(request, timeout=20)
                names = [output.name for output in response.outputs]
                values = np.frombuffer(response.raw_output_contents[names.index("OUTPUT")], dtype=np.float32)
                corrid = response.raw_output_contents[names.index("CORRID_SEEN")]
                probe_results.append(
                    {
                        "outputs": names,
                        "values": [float(v) for v in values],
                        "corrid": corrid[4:].decode("utf-8"),
                    }
                )
        print(json.dumps({"sequence_id": str(SEQUENCE_ID), "streamed": streamed, "after_end": after_end, "probe": probe_results}))
    finally:
        shutil.rmtree(stub_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
