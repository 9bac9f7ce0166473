#!/usr/bin/env python3
"""PyTorch reference for `paralab-bench step`: the same residual MLP, batch and optimizer,
one thread, timed the same way (median over repeats of the steady-state training step), on
the CPU or (--device cuda) the GPU. Prints one JSON line; where it cannot run on the device
asked for, a JSON line whose "not_run" gives the reason (exit 1). Needs Debian's python3-torch
(a CUDA build of PyTorch for --device cuda)."""
import argparse, json, os, sys, time
# Debian's PyTorch calls OpenBLAS, whose threads torch.set_num_threads does not govern:
# pin it to one thread before the library loads, as ParaLab's ranks are.
os.environ["OPENBLAS_NUM_THREADS"] = "1"
import torch
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--hidden", type=int, default=512)
p.add_argument("--layers", type=int, default=2)
p.add_argument("--batch", type=int, default=256)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--repeats", type=int, default=5)
p.add_argument("--lr", type=float, default=0.05)
p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
p.add_argument("--tf32", action="store_true",
               help="cuda: let the GEMMs round inputs to TF32 (ParaLab's tensor-core and "
                    "vendor-tf32 kernels do); otherwise they stay fp32, as cuBLAS's default")
a = p.parse_args()
engine = "pytorch " + torch.__version__

if a.device == "cuda" and not torch.cuda.is_available():
    why = ("this PyTorch is built without CUDA" if torch.version.cuda is None else
           "torch.cuda.is_available() is false: no GPU or driver visible to PyTorch "
           "(built for CUDA " + torch.version.cuda + ")")
    print(json.dumps({"engine": engine, "device": a.device, "not_run": why}))
    sys.exit(1)

torch.set_num_threads(1)
torch.manual_seed(1)
dev = torch.device(a.device)
if a.device == "cuda":
    # Set either way: PyTorch's default has changed between releases, and the comparison
    # with ParaLab only holds at the same GEMM precision.
    torch.backends.cuda.matmul.allow_tf32 = a.tf32

class Block(nn.Module):
    def __init__(self, h):
        super().__init__()
        self.ln, self.fc1, self.fc2 = nn.LayerNorm(h), nn.Linear(h, 4 * h), nn.Linear(4 * h, h)
        self.gelu = nn.GELU(approximate="tanh")
    def forward(self, x):
        return x + self.fc2(self.gelu(self.fc1(self.ln(x))))

model = nn.Sequential(nn.Linear(784, a.hidden), *[Block(a.hidden) for _ in range(a.layers)],
                      nn.Linear(a.hidden, 10)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()
# The data set stays in host memory and each batch is copied to the device, as ParaLab's
# step uploads its batch from the host.
X = torch.rand(8192, 784)
Y = torch.randint(0, 10, (8192,))
g = torch.Generator().manual_seed(2)

def step():
    idx = torch.randint(0, X.shape[0], (a.batch,), generator=g)
    x, y = X[idx].to(dev), Y[idx].to(dev)
    opt.zero_grad(set_to_none=True)
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()

def sync():
    # CUDA launches return before the GPU is done: the clock is read only once it is.
    if a.device == "cuda":
        torch.cuda.synchronize()

for _ in range(5):
    step()
rates = []
for _ in range(a.repeats):
    sync()
    t = time.perf_counter()
    for _ in range(a.steps):
        step()
    sync()
    rates.append(a.steps * a.batch / (time.perf_counter() - t))
rates.sort()
out = {"engine": engine, "samples_per_s": rates[len(rates) // 2],
       "threads": torch.get_num_threads()}
if a.device == "cuda":
    out.update({"device": "cuda", "gpu": torch.cuda.get_device_name(),
                "allow_tf32": torch.backends.cuda.matmul.allow_tf32})
print(json.dumps(out))
