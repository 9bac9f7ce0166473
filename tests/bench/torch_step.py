#!/usr/bin/env python3
"""PyTorch reference for `paralab-bench step`: the same residual MLP, batch and optimizer,
one thread, timed the same way (median over repeats of the steady-state training step).
Prints one JSON line. Needs Debian's python3-torch."""
import argparse, json, os, time
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
a = p.parse_args()
torch.set_num_threads(1)
torch.manual_seed(1)

class Block(nn.Module):
    def __init__(self, h):
        super().__init__()
        self.ln, self.fc1, self.fc2 = nn.LayerNorm(h), nn.Linear(h, 4 * h), nn.Linear(4 * h, h)
        self.gelu = nn.GELU(approximate="tanh")
    def forward(self, x):
        return x + self.fc2(self.gelu(self.fc1(self.ln(x))))

model = nn.Sequential(nn.Linear(784, a.hidden), *[Block(a.hidden) for _ in range(a.layers)],
                      nn.Linear(a.hidden, 10))
opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()
X = torch.rand(8192, 784)
Y = torch.randint(0, 10, (8192,))
g = torch.Generator().manual_seed(2)

def step():
    idx = torch.randint(0, X.shape[0], (a.batch,), generator=g)
    x, y = X[idx], Y[idx]
    opt.zero_grad(set_to_none=True)
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()

for _ in range(5):
    step()
rates = []
for _ in range(a.repeats):
    t = time.perf_counter()
    for _ in range(a.steps):
        step()
    rates.append(a.steps * a.batch / (time.perf_counter() - t))
rates.sort()
print(json.dumps({"engine": "pytorch " + torch.__version__, "samples_per_s": rates[len(rates) // 2],
                  "threads": torch.get_num_threads()}))
