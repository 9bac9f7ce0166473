#!/usr/bin/env python3
"""PyTorch reference for `paralab-bench gpt`: the same GPT (engine/model/gpt.h), batch and Adam,
timed the same way (median over repeats of the steady-state training step: zero_grad, forward,
loss, backward, optimizer step), on --threads CPU threads or (--device cuda) the GPU. Prints one
JSON line; where it cannot run as asked, a JSON line whose "not_run" gives the reason (exit 1).
Needs Debian's python3-torch (a CUDA build of PyTorch for --device cuda).

The model, as ParaLab's: token embedding wte [V, C] + position embedding wpe [T, C]; L pre-LN
blocks, x += proj(attention(qkv(LN1(x)))) with qkv one Linear C -> 3C (columns q | k | v), NH
causal heads of C/NH, and x += fc2(GELU(fc1(LN2(x)))), C -> 4C -> C; a final LayerNorm and an
untied head C -> V; cross-entropy, the mean over all B*T next-token predictions. GELU is the tanh
approximation, as the engine's kernels; LayerNorm eps 1e-5; Adam betas (0.9, 0.999), eps 1e-8,
no weight decay. Attention is written out, S = q k^T / sqrt(C/NH), causal mask, softmax, S v, as
the engine computes it (--attention sdpa: PyTorch's fused kernel instead, where it has one). The
key bias is held at 0, as the engine holds it (its gradient is zeroed before each update).

The input: --windows FILE, the batch of text windows ParaLab trains on (paralab-bench gpt writes
it), else token ids drawn uniformly at random.

model_flops_per_step = (6 N + 12 L C T) B T, N the parameter count: the model FLOPs of MFU
(Chowdhery et al. 2022, PaLM, appendix B), whatever the kernels actually execute."""
import argparse, json, math, os, statistics, sys, time


def threads_from_argv(argv):
    # --threads must reach OpenBLAS before the library loads, so before argparse runs.
    for i, s in enumerate(argv):
        if s == "--threads" and i + 1 < len(argv):
            v = argv[i + 1]
        elif s.startswith("--threads="):
            v = s.split("=", 1)[1]
        else:
            continue
        return v if v.isdigit() and int(v) > 0 else "1"  # argparse reports a bad value
    return "1"


# Debian's PyTorch calls OpenBLAS, whose threads torch.set_num_threads does not govern:
# give it the same thread count before the library loads.
os.environ["OPENBLAS_NUM_THREADS"] = threads_from_argv(sys.argv[1:])
import torch
import torch.nn as nn
import torch.nn.functional as F


def positive(s):
    v = int(s)
    if v < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return v


p = argparse.ArgumentParser(allow_abbrev=False)  # --thr 2 would escape threads_from_argv
p.add_argument("--vocab", type=positive, default=114)
p.add_argument("--seq", type=positive, default=64)
p.add_argument("--hidden", type=positive, default=128)
p.add_argument("--layers", type=positive, default=2)
p.add_argument("--heads", type=positive, default=4)
p.add_argument("--batch", type=positive, default=128, help="windows of seq + 1 tokens per step")
p.add_argument("--steps", type=positive, default=10)
p.add_argument("--repeats", type=positive, default=5)
p.add_argument("--threads", type=positive, default=1)
p.add_argument("--lr", type=float, default=0.003)
p.add_argument("--windows", default="",
               help="a file of --batch windows of seq + 1 token ids (int32, row after row), the "
                    "text ParaLab trains on; without it, ids drawn uniformly at random")
p.add_argument("--attention", choices=["explicit", "sdpa"], default="explicit",
               help="explicit: q k^T, mask, softmax, @ v, as the engine; sdpa: "
                    "F.scaled_dot_product_attention (PyTorch 2.0 and later)")
p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
p.add_argument("--tf32", action="store_true",
               help="cuda: let the GEMMs round inputs to TF32 (ParaLab's tensor-core and "
                    "vendor-tf32 kernels do); otherwise they stay fp32, as cuBLAS's default")
a = p.parse_args()
if a.hidden % a.heads:
    p.error("--heads %d must divide --hidden %d" % (a.heads, a.hidden))
engine = "pytorch " + torch.__version__


def not_run(why):
    print(json.dumps({"engine": engine, "device": a.device, "not_run": why}))
    sys.exit(1)


if a.device == "cuda" and not torch.cuda.is_available():
    not_run("this PyTorch is built without CUDA" if torch.version.cuda is None else
            "torch.cuda.is_available() is false: no GPU or driver visible to PyTorch "
            "(built for CUDA " + torch.version.cuda + ")")
if a.attention == "sdpa" and not hasattr(F, "scaled_dot_product_attention"):
    not_run("--attention sdpa: this PyTorch has no F.scaled_dot_product_attention (2.0 and later)")

torch.set_num_threads(a.threads)
torch.manual_seed(1)
dev = torch.device(a.device)
if a.device == "cuda":
    # Set either way: PyTorch's default has changed between releases, and the comparison
    # with ParaLab only holds at the same GEMM precision.
    torch.backends.cuda.matmul.allow_tf32 = a.tf32

V, T, C, L, NH = a.vocab, a.seq, a.hidden, a.layers, a.heads


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.qkv, self.proj = nn.LayerNorm(C), nn.Linear(C, 3 * C), nn.Linear(C, C)
        self.ln2, self.fc1, self.fc2 = nn.LayerNorm(C), nn.Linear(C, 4 * C), nn.Linear(4 * C, C)
        self.gelu = nn.GELU(approximate="tanh")
        with torch.no_grad():
            self.qkv.bias[C:2 * C].zero_()  # the key bias stays 0
        self.register_buffer("mask", torch.ones(T, T, dtype=torch.bool).triu(1))

    def attention(self, x):
        B = x.shape[0]
        hs = C // NH
        q, k, v = (t.view(B, T, NH, hs).transpose(1, 2) for t in self.qkv(x).split(C, dim=2))
        if a.attention == "sdpa":
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))  # [B, NH, T, T]
            y = s.masked_fill(self.mask, float("-inf")).softmax(dim=-1) @ v
        return self.proj(y.transpose(1, 2).reshape(B, T, C))

    def forward(self, x):
        x = x + self.attention(self.ln1(x))
        return x + self.fc2(self.gelu(self.fc1(self.ln2(x))))


class Gpt(nn.Module):
    def __init__(self):
        super().__init__()
        # Embeddings from N(0, 0.02^2) as GPT-2; Linear and LayerNorm keep PyTorch's defaults,
        # which the engine's are (U(-1/sqrt(in), 1/sqrt(in)); gamma 1, beta 0).
        self.wte, self.wpe = nn.Embedding(V, C), nn.Embedding(T, C)
        nn.init.normal_(self.wte.weight, std=0.02)
        nn.init.normal_(self.wpe.weight, std=0.02)
        self.blocks = nn.ModuleList(Block() for _ in range(L))
        self.lnf, self.head = nn.LayerNorm(C), nn.Linear(C, V)  # untied from wte
        self.register_buffer("pos", torch.arange(T))

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(self.pos)
        for b in self.blocks:
            x = b(x)
        return self.head(self.lnf(x))


model = Gpt().to(dev)
params = sum(t.numel() for t in model.parameters())
assert params == V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C + C * V + V, params
opt = torch.optim.Adam(model.parameters(), lr=a.lr, betas=(0.9, 0.999), eps=1e-8)
key_biases = [b.qkv.bias for b in model.blocks]

# B windows of T + 1 token ids, given or drawn once: the model reads 0..T-1 and predicts 1..T.
if a.windows:
    with open(a.windows, "rb") as f:
        raw = f.read()
    if len(raw) != 4 * a.batch * (T + 1):
        print(json.dumps({"engine": engine, "device": a.device,
                          "not_run": "windows: %s holds %d bytes, not %d windows of %d ids"
                                     % (a.windows, len(raw), a.batch, T + 1)}))
        sys.exit(1)
    ids = torch.frombuffer(bytearray(raw), dtype=torch.int32).long().view(a.batch, T + 1).to(dev)
    if int(ids.min()) < 0 or int(ids.max()) >= V:
        print(json.dumps({"engine": engine, "device": a.device,
                          "not_run": "windows: ids outside 0..%d" % (V - 1)}))
        sys.exit(1)
else:
    ids = torch.randint(0, V, (a.batch, T + 1), generator=torch.Generator().manual_seed(2)).to(dev)
inputs, targets = ids[:, :-1].contiguous(), ids[:, 1:].contiguous()


def step():
    opt.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(inputs).view(-1, V), targets.view(-1))
    loss.backward()
    for bias in key_biases:
        bias.grad[C:2 * C].zero_()
    opt.step()
    return loss


def sync():
    # CUDA launches return before the GPU is done: the clock is read only once it is.
    if a.device == "cuda":
        torch.cuda.synchronize()


for _ in range(5):
    step()
step_ms_all = []
for _ in range(a.repeats):
    sync()
    t = time.perf_counter()
    for _ in range(a.steps):
        loss = step()
    sync()
    step_ms_all.append((time.perf_counter() - t) * 1e3 / a.steps)
step_ms = statistics.median(step_ms_all)
flops = (6 * params + 12 * L * C * T) * a.batch * T
out = {"engine": engine, "device": a.device, "threads": torch.get_num_threads(),
       "vocab": V, "seq": T, "hidden": C, "layers": L, "heads": NH, "batch": a.batch,
       "steps": a.steps, "repeats": a.repeats, "lr": a.lr, "attention": a.attention,
       "params": params, "step_ms": step_ms, "tokens_per_s": a.batch * T / (step_ms * 1e-3),
       "step_ms_all": step_ms_all, "model_flops_per_step": flops,
       "achieved_gflops": flops / (step_ms * 1e-3) / 1e9, "loss": loss.item()}
if a.device == "cuda":
    out.update({"gpu": torch.cuda.get_device_name(),
                "allow_tf32": torch.backends.cuda.matmul.allow_tf32})
print(json.dumps(out))
