#!/usr/bin/env python3
"""PyTorch reference for `paralab-bench dp`: the residual MLP trained serially on the global
batch, then with DistributedDataParallel (gloo) on N processes of global/N each, one thread
per process; median steady-state step time of each. Prints one JSON line."""
import argparse, json, os, queue, socket, sys, time
# Debian's PyTorch calls OpenBLAS, whose threads torch.set_num_threads does not govern:
# pin it to one thread before the library loads, as ParaLab's ranks are.
os.environ["OPENBLAS_NUM_THREADS"] = "1"
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

def build(hidden, layers):
    class Block(nn.Module):
        def __init__(self, h):
            super().__init__()
            self.ln, self.fc1, self.fc2 = nn.LayerNorm(h), nn.Linear(h, 4 * h), nn.Linear(4 * h, h)
            self.gelu = nn.GELU(approximate="tanh")
        def forward(self, x):
            return x + self.fc2(self.gelu(self.fc1(self.ln(x))))
    torch.manual_seed(1)
    return nn.Sequential(nn.Linear(784, hidden), *[Block(hidden) for _ in range(layers)],
                         nn.Linear(hidden, 10))

def timed_steps(model, batch, steps, warmup):
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    x, y = torch.rand(batch, 784), torch.randint(0, 10, (batch,))
    times = []
    for s in range(warmup + steps):
        t = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        opt.step()
        if s >= warmup:
            times.append(time.perf_counter() - t)
    times.sort()
    return times[len(times) // 2]

def worker(rank, a, out):
    torch.set_num_threads(1)
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(a.port)
    dist.init_process_group("gloo", rank=rank, world_size=a.ranks)
    model = nn.parallel.DistributedDataParallel(build(a.hidden, a.layers))
    t = timed_steps(model, a.batch // a.ranks, a.steps, 3)
    times = [None] * a.ranks
    dist.all_gather_object(times, t)
    if rank == 0:
        out.put(max(times))
    dist.destroy_process_group()

if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--steps", type=int, default=15)
    p.add_argument("--port", type=int, default=0, help="rendezvous port; 0 picks a free one")
    a = p.parse_args()
    if a.port == 0:  # a fixed port collides with a run that has just finished (TIME_WAIT)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            a.port = s.getsockname()[1]
    torch.set_num_threads(1)
    serial = timed_steps(build(a.hidden, a.layers), a.batch, a.steps, 3)
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(r, a, q)) for r in range(a.ranks)]
    for pr in procs:
        pr.start()
    ddp = None
    while ddp is None:  # a worker that dies must fail the run, not leave the other waiting
        try:
            ddp = q.get(timeout=1)
        except queue.Empty:
            if any(pr.exitcode not in (None, 0) for pr in procs):
                for pr in procs:
                    pr.kill()
                sys.exit("a DDP worker failed")
    for pr in procs:
        pr.join()
    print(json.dumps({"engine": "pytorch " + torch.__version__, "serial_step_ms": serial * 1e3,
                      "ddp_step_ms": ddp * 1e3, "ranks": a.ranks, "speedup": serial / ddp}))
