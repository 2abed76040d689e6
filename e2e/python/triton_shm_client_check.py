#!/usr/bin/env python3
"""System shared-memory check for Operon, written the way Triton's Python client does it.

tritonclient.utils.shared_memory (libcshm) creates a region with shm_open(key, O_RDWR|O_CREAT),
ftruncate and mmap, writes numpy arrays into it, and the client then registers the region and
names it in the tensors' parameters (shared_memory_region / _byte_size / _offset). tritonclient
is not installable here (no PyPI), so this script does the same with Python's own shm_open
(_posixshmem, what multiprocessing.shared_memory uses) and mmap, then drives the HTTP API with
urllib and the gRPC API with grpcio stubs generated from packages/protocol/proto, as
simple_http_shm_client.py and simple_grpc_shm_client.py do.

Prints one JSON object with what came back; e2e/system-shared-memory.test.ts asserts on it.

Usage: triton_shm_client_check.py HTTP_URL GRPC_HOST:PORT [MODEL]
"""

import importlib
import json
import mmap
import os
import shutil
import sys
import tempfile
import urllib.error
import urllib.request

import _posixshmem
import numpy as np

PROTO_DIR = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "packages", "protocol", "proto"))


class Region:
    """tritonclient.utils.shared_memory.create_shared_memory_region, in plain Python."""

    def __init__(self, key, byte_size):
        self.key = key
        self.byte_size = byte_size
        fd = _posixshmem.shm_open(key, os.O_RDWR | os.O_CREAT, mode=0o600)
        try:
            os.ftruncate(fd, byte_size)
            self.map = mmap.mmap(fd, byte_size)
        finally:
            os.close(fd)

    def set(self, offset, array):
        data = np.ascontiguousarray(array).tobytes()
        self.map[offset : offset + len(data)] = data

    def get(self, offset, dtype, shape):
        count = int(np.prod(shape))
        return np.frombuffer(self.map, dtype=dtype, count=count, offset=offset).reshape(shape).copy()

    def destroy(self):
        self.map.close()
        try:
            _posixshmem.shm_unlink(self.key)
        except FileNotFoundError:
            pass


def http(base, method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            text = response.read().decode()
            return response.status, (json.loads(text) if text else None)
    except urllib.error.HTTPError as error:
        text = error.read().decode()
        return error.code, (json.loads(text) if text else None)


def shm_params(region, byte_size, offset):
    return {"shared_memory_region": region, "shared_memory_byte_size": byte_size, "shared_memory_offset": offset}


def http_checks(base, model, pid):
    out = {}
    a = np.arange(16, dtype=np.float32).reshape(1, 16)
    b = np.full((1, 16), 0.25, dtype=np.float32)
    ins = Region(f"/py_in_{pid}", 128)
    outs = Region(f"/py_out_{pid}", 128)
    try:
        ins.set(0, a)
        ins.set(64, b)
        out["register_in"] = http(base, "POST", "/v2/systemsharedmemory/region/input_data/register", {"key": ins.key, "offset": 0, "byte_size": 128})[0]
        out["register_out"] = http(base, "POST", "/v2/systemsharedmemory/region/output_data/register", {"key": outs.key, "offset": 0, "byte_size": 128})[0]
        out["register_again"] = http(base, "POST", "/v2/systemsharedmemory/region/input_data/register", {"key": ins.key, "offset": 0, "byte_size": 128})
        out["status"] = http(base, "GET", "/v2/systemsharedmemory/status")
        out["status_one"] = http(base, "GET", "/v2/systemsharedmemory/region/input_data/status")
        request = {
            "inputs": [
                {"name": "INPUT0", "datatype": "FP32", "shape": [1, 16], "parameters": shm_params("input_data", 64, 0)},
                {"name": "INPUT1", "datatype": "FP32", "shape": [1, 16], "parameters": shm_params("input_data", 64, 64)},
            ],
            "outputs": [
                {"name": "OUTPUT0", "parameters": shm_params("output_data", 64, 0)},
                {"name": "OUTPUT1", "parameters": shm_params("output_data", 64, 64)},
            ],
        }
        status, body = http(base, "POST", f"/v2/models/{model}/infer", request)
        out["infer_status"] = status
        out["infer_outputs"] = body.get("outputs") if isinstance(body, dict) else body
        sum_ = outs.get(0, np.float32, (1, 16))
        diff = outs.get(64, np.float32, (1, 16))
        out["sum_matches"] = bool(np.array_equal(sum_, a + b))
        out["diff_matches"] = bool(np.array_equal(diff, a - b))
        # Mixed: one input in shared memory, one as JSON data; outputs as usual.
        mixed = {
            "inputs": [
                {"name": "INPUT0", "datatype": "FP32", "shape": [1, 16], "parameters": shm_params("input_data", 64, 0)},
                {"name": "INPUT1", "datatype": "FP32", "shape": [1, 16], "data": b.flatten().tolist()},
            ]
        }
        status, body = http(base, "POST", f"/v2/models/{model}/infer", mixed)
        out["mixed_status"] = status
        out["mixed_sum"] = body["outputs"][0]["data"] if status == 200 else body
        # An output region too small for the output.
        small = dict(request, outputs=[{"name": "OUTPUT0", "parameters": shm_params("output_data", 32, 0)}])
        out["small_output"] = http(base, "POST", f"/v2/models/{model}/infer", small)
        out["unregister_one"] = http(base, "POST", "/v2/systemsharedmemory/region/input_data/unregister")[0]
        out["after_unregister"] = http(base, "POST", f"/v2/models/{model}/infer", request)
        out["unregister_all"] = http(base, "POST", "/v2/systemsharedmemory/unregister")[0]
        out["status_after"] = http(base, "GET", "/v2/systemsharedmemory/status")
        # The owner unlinks its object while it is registered: the next request fails cleanly.
        out["register_then_unlink"] = http(base, "POST", "/v2/systemsharedmemory/region/input_data/register", {"key": ins.key, "offset": 0, "byte_size": 128})[0]
        _posixshmem.shm_unlink(ins.key)
        out["after_unlink"] = http(base, "POST", f"/v2/models/{model}/infer", dict(request, outputs=[]))
        http(base, "POST", "/v2/systemsharedmemory/unregister")
        out["cuda_register"] = http(base, "POST", "/v2/cudasharedmemory/region/gpu/register", {"raw_handle": {"b64": ""}, "device_id": 0, "byte_size": 64})
    finally:
        ins.destroy()
        outs.destroy()
    return out


def grpc_checks(address, model, pid):
    import grpc
    from grpc_tools import protoc

    stub_dir = tempfile.mkdtemp(prefix="operon-py-shm-stubs-")
    try:
        args = ["grpc_tools.protoc", "-I" + PROTO_DIR, "--python_out=" + stub_dir, "--grpc_python_out=" + stub_dir, "grpc_service.proto", "model_config.proto"]
        if protoc.main(args) != 0:
            raise SystemExit("grpc_tools.protoc failed")
        sys.path.insert(0, stub_dir)
        pb = importlib.import_module("grpc_service_pb2")
        pb_grpc = importlib.import_module("grpc_service_pb2_grpc")
        out = {}
        a = np.arange(16, dtype=np.float32).reshape(1, 16) * 2
        b = np.ones((1, 16), dtype=np.float32)
        ins = Region(f"/py_gin_{pid}", 128)
        outs = Region(f"/py_gout_{pid}", 128)
        try:
            ins.set(0, a)
            ins.set(64, b)
            with grpc.insecure_channel(address) as channel:
                stub = pb_grpc.GRPCInferenceServiceStub(channel)
                stub.SystemSharedMemoryRegister(pb.SystemSharedMemoryRegisterRequest(name="g_in", key=ins.key, offset=0, byte_size=128), timeout=10)
                stub.SystemSharedMemoryRegister(pb.SystemSharedMemoryRegisterRequest(name="g_out", key=outs.key, offset=0, byte_size=128), timeout=10)
                status = stub.SystemSharedMemoryStatus(pb.SystemSharedMemoryStatusRequest(name=""), timeout=10)
                out["status"] = sorted(
                    [{"name": r.name, "key": r.key, "offset": r.offset, "byte_size": r.byte_size} for r in status.regions.values()],
                    key=lambda r: r["name"],
                )

                def tensor_params(target, region, size, offset):
                    target["shared_memory_region"].string_param = region
                    target["shared_memory_byte_size"].int64_param = size
                    target["shared_memory_offset"].int64_param = offset

                request = pb.ModelInferRequest(model_name=model, id="shm-1")
                for name, offset in (("INPUT0", 0), ("INPUT1", 64)):
                    tensor = request.inputs.add(name=name, datatype="FP32", shape=[1, 16])
                    tensor_params(tensor.parameters, "g_in", 64, offset)
                for name, offset in (("OUTPUT0", 0), ("OUTPUT1", 64)):
                    tensor = request.outputs.add(name=name)
                    tensor_params(tensor.parameters, "g_out", 64, offset)
                response = stub.ModelInfer(request, timeout=10)
                out["infer_outputs"] = [{"name": o.name, "datatype": o.datatype, "shape": list(o.shape)} for o in response.outputs]
                out["raw_output_sizes"] = [len(r) for r in response.raw_output_contents]
                out["sum_matches"] = bool(np.array_equal(outs.get(0, np.float32, (1, 16)), a + b))
                out["diff_matches"] = bool(np.array_equal(outs.get(64, np.float32, (1, 16)), a - b))
                # A hostile offset: 2^63 - 1 over a 128-byte region.
                bad = pb.ModelInferRequest(model_name=model)
                tensor = bad.inputs.add(name="INPUT0", datatype="FP32", shape=[1, 16])
                tensor_params(tensor.parameters, "g_in", 64, 2**63 - 1)
                tensor = bad.inputs.add(name="INPUT1", datatype="FP32", shape=[1, 16])
                tensor_params(tensor.parameters, "g_in", 64, 64)
                try:
                    stub.ModelInfer(bad, timeout=10)
                    out["hostile_offset"] = "accepted"
                except grpc.RpcError as error:
                    out["hostile_offset"] = {"code": error.code().name, "details": error.details()}
                try:
                    stub.SystemSharedMemoryRegister(pb.SystemSharedMemoryRegisterRequest(name="big", key=ins.key, offset=0, byte_size=2**64 - 1), timeout=10)
                    out["hostile_register"] = "accepted"
                except grpc.RpcError as error:
                    out["hostile_register"] = {"code": error.code().name, "details": error.details()}
                try:
                    stub.CudaSharedMemoryRegister(pb.CudaSharedMemoryRegisterRequest(name="gpu", raw_handle=b"", device_id=0, byte_size=64), timeout=10)
                    out["cuda_register"] = "accepted"
                except grpc.RpcError as error:
                    out["cuda_register"] = {"code": error.code().name, "details": error.details()}
                stub.SystemSharedMemoryUnregister(pb.SystemSharedMemoryUnregisterRequest(name=""), timeout=10)
                out["status_after"] = len(stub.SystemSharedMemoryStatus(pb.SystemSharedMemoryStatusRequest(name=""), timeout=10).regions)
        finally:
            ins.destroy()
            outs.destroy()
        return out
    finally:
        shutil.rmtree(stub_dir, ignore_errors=True)


def main():
    if len(sys.argv) < 3:
        raise SystemExit("usage: triton_shm_client_check.py HTTP_URL GRPC_HOST:PORT [MODEL]")
    base, address = sys.argv[1].rstrip("/"), sys.argv[2]
    model = sys.argv[3] if len(sys.argv) > 3 else "add_sub"
    pid = os.getpid()
    print(json.dumps({"http": http_checks(base, model, pid), "grpc": grpc_checks(address, model, pid)}))


if __name__ == "__main__":
    main()
