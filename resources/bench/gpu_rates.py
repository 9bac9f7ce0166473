# Measures what resources/gpus/<gpu>.json's "matmul_by_shape" and "fused_attention" hold, on the
# GPU this runs on: bf16 GEMM rates on a grid of shapes (cuBLAS), and the rates of two fused causal
# attention kernels (cuDNN's, FlashAttention-2) at sequence 4096, head size 128, by heads a launch.
# Run: python3 resources/bench/gpu_rates.py > rates.json (PyTorch with CUDA; about a minute).
import json
import statistics
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def median_seconds(fn, repeats=10, warmup=3):
    """CUDA-event time of fn, the median of `repeats` calls after `warmup`."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return statistics.median(times)


def gemm_tflops(m, n, k):
    # A linear layer's forward: activations m x k times the stored n x k weight, transposed.
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    return 2.0 * m * n * k / median_seconds(lambda: a @ w.t()) / 1e12


def attention_tflops(backend, heads, seq=4096, head_dim=128):
    # FLOPs over the full s x s products, the causal half not skipped: forward 4 s^2 d per head,
    # backward twice that (the projection's count).
    q, k, v = (torch.randn(1, heads, seq, head_dim, device="cuda", dtype=torch.bfloat16,
                           requires_grad=True) for _ in range(3))
    grad = torch.randn(1, heads, seq, head_dim, device="cuda", dtype=torch.bfloat16)
    forward = 4.0 * heads * seq * seq * head_dim
    with sdpa_kernel(backend):
        fwd = median_seconds(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True), 20, 5)
        both = median_seconds(lambda: torch.autograd.grad(
            F.scaled_dot_product_attention(q, k, v, is_causal=True), (q, k, v), grad), 20, 5)
    return forward / fwd / 1e12, 2 * forward / (both - fwd) / 1e12


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    ms, grid = [1024, 4096, 16384], [256, 512, 1024, 2048, 3072, 4096, 6144, 8192, 12288, 16384,
                                     24576, 32768]
    table = []
    for m in ms:
        plane = []
        for n in grid:
            row = []
            for k in grid:
                # The largest products repeat the nearest smaller k (time, not information).
                row.append(round(gemm_tflops(m, n, k), 1) if 2.0 * m * n * k <= 1.2e13 else row[-1])
            plane.append(row)
        table.append(plane)
        print(f"m {m} done", file=sys.stderr, flush=True)
    heads = [7, 8, 12, 16, 18]
    fused = {}
    for name, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION),
                          ("flash2", SDPBackend.FLASH_ATTENTION)):
        rates = [attention_tflops(backend, h) for h in heads]
        fused[name] = {"seq": 4096, "head_dim": 128, "heads": heads,
                       "fwd_tflops": [round(f, 1) for f, _ in rates],
                       "bwd_tflops": [round(b, 1) for _, b in rates]}
    print(json.dumps({
        "gpu": torch.cuda.get_device_name(),
        "matmul_by_shape": {"m": ms, "n": grid, "k": grid, "tflops": table},
        "fused_attention": fused,
    }))


if __name__ == "__main__":
    main()
