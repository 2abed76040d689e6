#!/usr/bin/env python3
"""Independent gRPC client check for Operon, the way a Triton user would write it.

Generates Python stubs from packages/protocol/proto (Triton's grpc_service.proto,
model_config.proto, health.proto) into a temporary folder with grpc_tools, then
calls the server with grpcio + numpy: grpc.health.v1 Check, ServerMetadata,
ModelMetadata and ModelInfer on add_sub with raw_input_contents. Prints one
JSON object with what came back; e2e/grpc-protocol.test.ts asserts on it.

Usage: triton_grpc_client_check.py HOST:PORT [MODEL]
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


def generate_stubs(out_dir):
    args = ["grpc_tools.protoc", "-I" + PROTO_DIR, "--python_out=" + out_dir, "--grpc_python_out=" + out_dir] + PROTOS
    if protoc.main(args) != 0:
        raise SystemExit("grpc_tools.protoc failed to generate stubs from " + PROTO_DIR)
    sys.path.insert(0, out_dir)
    return (
        importlib.import_module("grpc_service_pb2"),
        importlib.import_module("grpc_service_pb2_grpc"),
        importlib.import_module("health_pb2"),
        importlib.import_module("health_pb2_grpc"),
    )


def main():
    if len(sys.argv) < 2:
        raise SystemExit("usage: triton_grpc_client_check.py HOST:PORT [MODEL]")
    address = sys.argv[1]
    model = sys.argv[2] if len(sys.argv) > 2 else "add_sub"
    stub_dir = tempfile.mkdtemp(prefix="operon-py-stubs-")
    try:
        pb, pb_grpc, health_pb, health_grpc = generate_stubs(stub_dir)
        with grpc.insecure_channel(address) as channel:
            stub = pb_grpc.GRPCInferenceServiceStub(channel)
            health = health_grpc.HealthStub(channel)

            health_status = health.Check(health_pb.HealthCheckRequest(service=""), timeout=10)
            server = stub.ServerMetadata(pb.ServerMetadataRequest(), timeout=10)
            metadata = stub.ModelMetadata(pb.ModelMetadataRequest(name=model), timeout=10)

            input0 = np.arange(16, dtype=np.float32).reshape(1, 16)
            input1 = np.full((1, 16), 0.5, dtype=np.float32)
            request = pb.ModelInferRequest(model_name=model, id="python-1")
            for name, array in (("INPUT0", input0), ("INPUT1", input1)):
                tensor = request.inputs.add()
                tensor.name = name
                tensor.datatype = "FP32"
                tensor.shape.extend(array.shape)
            request.raw_input_contents.extend([input0.tobytes(), input1.tobytes()])
            response = stub.ModelInfer(request, timeout=10)

            outputs = []
            for output, raw in zip(response.outputs, response.raw_output_contents):
                array = np.frombuffer(raw, dtype=np.float32).reshape(tuple(output.shape))
                outputs.append(
                    {"name": output.name, "datatype": output.datatype, "shape": list(output.shape), "data": array.flatten().tolist()}
                )
            expected = {"OUTPUT0": (input0 + input1).flatten().tolist(), "OUTPUT1": (input0 - input1).flatten().tolist()}

            print(
                json.dumps(
                    {
                        "grpc_version": grpc.__version__,
                        "health": health_pb.HealthCheckResponse.ServingStatus.Name(health_status.status),
                        "server": {"name": server.name, "version": server.version, "extensions": list(server.extensions)},
                        "metadata": {
                            "name": metadata.name,
                            "versions": list(metadata.versions),
                            "inputs": [{"name": t.name, "datatype": t.datatype, "shape": list(t.shape)} for t in metadata.inputs],
                        },
                        "infer": {
                            "model_name": response.model_name,
                            "model_version": response.model_version,
                            "id": response.id,
                            "outputs": outputs,
                            "matches_numpy": all(o["data"] == expected.get(o["name"]) for o in outputs),
                        },
                    }
                )
            )
    finally:
        shutil.rmtree(stub_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
