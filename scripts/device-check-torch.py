# PyTorch's MLP 784-2048-2048-10 on the same GPU and precisions as cuda-bench (device-check.sh).
import time
import torch

assert torch.cuda.is_available(), "PyTorch sees no CUDA device"
print("| precision | batch | best time | rows/s | TFLOP/s |\n|---|---|---|---|---|")
for name, dtype in (("fp32", torch.float32), ("fp16", torch.float16), ("bf16", torch.bfloat16)):
    torch.backends.cuda.matmul.allow_tf32 = False
    mlp = torch.nn.Sequential(torch.nn.Linear(784, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 10)).cuda().to(dtype)
    for batch in (256, 1024, 4096, 16384):
        x = torch.rand(batch, 784, device="cuda", dtype=dtype)
        with torch.no_grad():
            for _ in range(3):
                mlp(x)
            torch.cuda.synchronize()
            best = 1e30
            for _ in range(10):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record(); mlp(x); end.record(); torch.cuda.synchronize()
                best = min(best, start.elapsed_time(end) * 1000)
        flops = 2.0 * batch * (784 * 2048 + 2048 * 2048 + 2048 * 10)
        print(f"| {name} | {batch} | {best:.1f} us | {batch / best * 1e6:.0f} | {flops / best / 1e6:.1f} |")
