"""torch.ops.porta inside torch.distributed: 2 processes on localhost, gloo. The rendezvous is
a FileStore in a temporary folder and gloo's connections take ports the system assigns, so no
fixed port is used and parallel ctest runs cannot collide.

- Tensor parallel (Megatron-style): a pre-norm transformer block whose attention heads and MLP
  columns are split across the ranks (column-parallel Q/K/V and first MLP linear, row-parallel
  output projection and second MLP linear, each followed by an all-reduce), every per-rank
  computation a torch.ops.porta op (RmsNorm, MatMul, Add, ScaledDotProductAttention, BiasGelu).
  Its output must equal the same block computed full-width in one process through porta and a
  float64 torch reference, and so must its gradients (Megatron's conjugate all-reduces as
  autograd functions): each rank's are its shard of the full-width block's.
- Data parallel: one SGD step of DistributedDataParallel over the full block, each rank on its
  own half of the batch, gradients through the porta ops' composites. The gradients must be
  equal on both ranks and equal the gradient of the whole batch in one process, and the updated
  parameters the single-process SGD step.

Fresh random weights and inputs each run (printed seed; PORTA_TEST_SEED repeats one). Run with
Debian's python3-torch (ctest sets the variable):
    PORTA_TORCH_LIBRARY=build/lib/libporta_torch.so OMP_NUM_THREADS=1 \
    /usr/bin/python3 -m unittest test_torch_distributed
"""
import datetime
import math
import os
import random
import tempfile
import time
import unittest

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

torch.ops.load_library(os.environ["PORTA_TORCH_LIBRARY"])
porta = torch.ops.porta

WORLD = 2
BATCH, SEQ, DIM, HEADS, HIDDEN = 4, 6, 32, 4, 64  # HEADS and HIDDEN split evenly over WORLD
HEAD_DIM = DIM // HEADS
EPS = 1e-5
LR = 0.1
# A collective that waits longer than this for its peer raises instead of hanging; the parent
# gives the whole run JOIN_SECONDS before it kills the workers (ctest's TIMEOUT is the last guard).
COLLECTIVE_SECONDS = 60
JOIN_SECONDS = 240

SEED = int(os.environ.get("PORTA_TEST_SEED", random.randrange(1 << 31)))
# f32 tolerances, relative to the largest magnitude of the reference (for weight gradients: of
# the largest weight gradient). Every value comes from dot products of at most HIDDEN = 64 terms
# of O(1) numbers and a few elementwise steps, so f32's unit roundoff (6e-8) grows to a few 1e-7.
# Largest seen: 3.4e-7 for outputs, losses and updated weights over 66 seeds, 4.4e-7 for
# gradients over 32. The bounds leave ~9x on those, while a skipped all-reduce, a lost shard, a
# missed optimizer step (it moves weights by LR * gradient, ~1e-2) or a wrong kernel moves
# results by far more.
FORWARD_TOL = 3e-6
GRAD_TOL = 4e-6


def make_weights(gen):
    """The block's full-width weights, as [in, out] matrices (y = x @ W + b)."""
    def randn(*shape, scale=1.0):
        return torch.randn(*shape, generator=gen) * scale

    return {
        "norm1": 1 + 0.1 * randn(DIM), "norm2": 1 + 0.1 * randn(DIM),
        "wq": randn(DIM, DIM, scale=DIM ** -0.5), "bq": 0.1 * randn(DIM),
        "wk": randn(DIM, DIM, scale=DIM ** -0.5), "bk": 0.1 * randn(DIM),
        "wv": randn(DIM, DIM, scale=DIM ** -0.5), "bv": 0.1 * randn(DIM),
        "wo": randn(DIM, DIM, scale=DIM ** -0.5), "bo": 0.1 * randn(DIM),
        "w1": randn(DIM, HIDDEN, scale=DIM ** -0.5), "b1": 0.1 * randn(HIDDEN),
        "w2": randn(HIDDEN, DIM, scale=HIDDEN ** -0.5), "b2": 0.1 * randn(DIM),
    }


def shard(weights, rank, world):
    """This rank's part: its heads' columns of Q/K/V and rows of the output projection, its
    columns of the first MLP linear and rows of the second; norms and the row-parallel
    linears' biases are replicated (those biases are added once, after the all-reduce)."""
    def cols(w, n):
        return w[..., rank * n // world:(rank + 1) * n // world].contiguous()

    def rows(w, n):
        return w[rank * n // world:(rank + 1) * n // world].contiguous()

    part = dict(weights)
    for name in ["wq", "wk", "wv", "bq", "bk", "bv"]:
        part[name] = cols(weights[name], DIM)
    part["wo"] = rows(weights["wo"], DIM)
    part["w1"], part["b1"] = cols(weights["w1"], HIDDEN), cols(weights["b1"], HIDDEN)
    part["w2"] = rows(weights["w2"], HIDDEN)
    return part


class CopyToRanks(torch.autograd.Function):
    """Megatron's f, before a column-parallel linear: every rank already holds its input, so
    forward is the identity; backward sums the ranks' gradients of it (each rank's covers only
    its columns)."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        grad = grad.clone()
        dist.all_reduce(grad, group=ctx.group)
        return grad, None


class SumOverRanks(torch.autograd.Function):
    """Megatron's g, after a row-parallel linear: forward sums the ranks' partial results;
    every rank then holds the whole sum, so backward passes its gradient through."""

    @staticmethod
    def forward(ctx, partial, group):
        total = partial.clone()
        dist.all_reduce(total, group=group)
        return total

    @staticmethod
    def backward(ctx, grad):
        return grad, None


def copy_to_ranks(x, group):
    return x if group is None else CopyToRanks.apply(x, group)


def sum_over_ranks(partial, group):
    """The ranks' partial results summed (group None: one process holds the whole block)."""
    return partial if group is None else SumOverRanks.apply(partial, group)


def porta_block(x, w, group=None):
    """The transformer block on this rank's weights, every computation a porta op; with a
    group the weights are a shard, the row-parallel outputs are summed over the group, and so
    are the gradients of the column-parallel linears' inputs."""
    batch, seq, _ = x.shape
    heads = w["wq"].shape[-1] // HEAD_DIM

    def linear(t, weight, bias=None):
        y = porta.MatMul(t, weight)
        return y if bias is None else porta.Add(y, bias)

    def split_heads(t):
        return t.reshape(batch, seq, heads, HEAD_DIM).transpose(1, 2)

    h = copy_to_ranks(porta.RmsNorm(x, w["norm1"], epsilon=EPS), group)
    q, k, v = (split_heads(linear(h, w["w" + n], w["b" + n])) for n in "qkv")
    attention = porta.ScaledDotProductAttention(q, k, v, causal=True)
    attention = attention.transpose(1, 2).reshape(batch, seq, heads * HEAD_DIM)
    x = porta.Add(x, porta.Add(sum_over_ranks(linear(attention, w["wo"]), group), w["bo"]))
    h = copy_to_ranks(porta.RmsNorm(x, w["norm2"], epsilon=EPS), group)
    u = porta.BiasGelu(linear(h, w["w1"]), w["b1"])
    return porta.Add(x, porta.Add(sum_over_ranks(linear(u, w["w2"]), group), w["b2"]))


def reference_block(x, w):
    """The same block in float64 with torch's own ops."""
    x = x.double()
    w = {n: t.double() for n, t in w.items()}
    batch, seq, _ = x.shape

    def rms_norm(t, scale):
        return t / torch.sqrt(t.pow(2).mean(-1, keepdim=True) + EPS) * scale

    def split_heads(t):
        return t.reshape(batch, seq, HEADS, HEAD_DIM).transpose(1, 2)

    h = rms_norm(x, w["norm1"])
    q, k, v = (split_heads(h @ w["w" + n] + w["b" + n]) for n in "qkv")
    scores = q @ k.transpose(-2, -1) / math.sqrt(HEAD_DIM)
    scores = scores.masked_fill(torch.ones(seq, seq, dtype=torch.bool).triu(1), float("-inf"))
    attention = (torch.softmax(scores, -1) @ v).transpose(1, 2).reshape(batch, seq, DIM)
    x = x + attention @ w["wo"] + w["bo"]
    h = rms_norm(x, w["norm2"])
    return x + torch.nn.functional.gelu(h @ w["w1"] + w["b1"]) @ w["w2"] + w["b2"]


class Block(torch.nn.Module):
    """The full-width block as a module, its weights parameters (what DDP replicates)."""

    def __init__(self, weights, forward):
        super().__init__()
        self.weights = torch.nn.ParameterDict({n: torch.nn.Parameter(t.clone()) for n, t in weights.items()})
        self.block = forward

    def forward(self, x):
        return self.block(x, dict(self.weights.items()))


def loss_of(output, target):
    return (output - target).pow(2).mean()


def block_gradients(block, x, weights, target, group=None):
    """The block's output, and the gradients of the loss with respect to its input and weights."""
    x = x.detach().clone().requires_grad_()
    weights = {n: t.detach().clone().requires_grad_() for n, t in weights.items()}
    output = block(x, weights) if group is None else block(x, weights, group)
    loss_of(output, target).backward()
    return {"output": output.detach(), "input": x.grad, "weights": {n: t.grad for n, t in weights.items()}}


def sgd_step(model, x, target):
    """One step of plain SGD: the loss, the gradients, and the parameters after the step, by
    the weight's name (DDP's "module.weights.wq" and Block's "weights.wq" are both "wq")."""
    params = {name.rsplit(".", 1)[1]: p for name, p in model.named_parameters()}
    optimizer = torch.optim.SGD(params.values(), lr=LR)
    optimizer.zero_grad()
    loss = loss_of(model(x), target)
    loss.backward()
    grads = {n: p.grad.detach().clone() for n, p in params.items()}
    optimizer.step()
    return loss.detach(), grads, {n: p.detach().clone() for n, p in params.items()}


def worker(rank, folder):
    """One rank: the tensor-parallel block's output and gradients, then one DDP step on its half
    of the batch; its results go to rank<N>.pt in the folder for the parent to check."""
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="file://" + os.path.join(folder, "store"), rank=rank,
                            world_size=WORLD, timeout=datetime.timedelta(seconds=COLLECTIVE_SECONDS))
    try:
        case = torch.load(os.path.join(folder, "case.pt"))
        tensor_parallel = block_gradients(porta_block, case["x"], shard(case["weights"], rank, WORLD),
                                          case["target"], dist.group.WORLD)

        per_rank = BATCH // WORLD
        mine = slice(rank * per_rank, (rank + 1) * per_rank)
        ddp = torch.nn.parallel.DistributedDataParallel(Block(case["weights"], porta_block))
        loss, grads, params = sgd_step(ddp, case["x"][mine], case["target"][mine])
        torch.save({"tensor_parallel": tensor_parallel, "loss": loss, "grads": grads, "params": params},
                   os.path.join(folder, f"rank{rank}.pt"))
    finally:
        dist.destroy_process_group()


def silent_peer_worker(rank, folder, collective_seconds):
    """Rank 0 all-reduces; rank 1 joins the group but never the all-reduce (a hung peer)."""
    dist.init_process_group("gloo", init_method="file://" + os.path.join(folder, "store"), rank=rank,
                            world_size=WORLD, timeout=datetime.timedelta(seconds=collective_seconds))
    if rank == 0:
        dist.all_reduce(torch.ones(3))
    else:
        time.sleep(10 * collective_seconds)


def sleeping_worker(rank, seconds):
    time.sleep(seconds)


def run_ranks(fn, args, join_seconds=JOIN_SECONDS):
    """Starts WORLD processes of fn(rank, *args) and waits for them; a worker's error, or a run
    past join_seconds, ends them all and raises."""
    context = mp.start_processes(fn, args=args, nprocs=WORLD, join=False, start_method="spawn")
    deadline = time.monotonic() + join_seconds
    while not context.join(timeout=max(0.0, deadline - time.monotonic())):
        if time.monotonic() >= deadline:
            for process in context.processes:
                if process.is_alive():
                    process.kill()
            for process in context.processes:
                process.join()
            raise TimeoutError(f"the {WORLD} ranks did not finish within {join_seconds} s")


class Distributed(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        print(f"test_torch_distributed: seed {SEED}")
        gen = torch.Generator().manual_seed(SEED)
        cls.weights = make_weights(gen)
        cls.x = torch.randn(BATCH, SEQ, DIM, generator=gen)
        cls.target = torch.randn(BATCH, SEQ, DIM, generator=gen)
        with tempfile.TemporaryDirectory(prefix="porta_dist_") as folder:
            torch.save({"weights": cls.weights, "x": cls.x, "target": cls.target}, os.path.join(folder, "case.pt"))
            run_ranks(worker, (folder,))
            cls.ranks = [torch.load(os.path.join(folder, f"rank{r}.pt")) for r in range(WORLD)]

    def close(self, got, want, tol, what, scale=None):
        """max |got - want| <= tol * scale, scale being max |want| unless given."""
        self.assertEqual(tuple(got.shape), tuple(want.shape), what)
        self.assertFalse(torch.isnan(got).any(), f"{what}: NaN")
        err = (got.double() - want.double()).abs().max().item()
        scale = want.double().abs().max().item() if scale is None else scale
        print(f"  {what}: max error {err:.2e}, {err / scale:.2e} of {scale:.3f}")
        self.assertLessEqual(err, tol * scale, f"{what}: max error {err}, more than {tol} of {scale}")

    def test_tensor_parallel_block(self):
        single = porta_block(self.x, self.weights)
        reference = reference_block(self.x, self.weights)
        self.close(single, reference, FORWARD_TOL, "single-process porta block vs float64")
        for rank, result in enumerate(self.ranks):
            got = result["tensor_parallel"]["output"]
            self.close(got, reference, FORWARD_TOL, f"rank {rank} tensor-parallel vs float64")
            self.close(got, single, FORWARD_TOL, f"rank {rank} tensor-parallel vs single-process")

    def test_tensor_parallel_gradients(self):
        # Each rank's gradients are its shard of the full-width block's: the rows and columns of
        # its heads and MLP units, and the whole gradient of the replicated norms, biases and input.
        single = block_gradients(porta_block, self.x, self.weights, self.target)
        reference = block_gradients(reference_block, self.x, self.weights, self.target.double())
        grad_scale = max(g.abs().max().item() for g in reference["weights"].values())
        self.close(single["input"], reference["input"], GRAD_TOL, "single-process input gradient vs float64")
        for rank, result in enumerate(self.ranks):
            got = result["tensor_parallel"]
            self.close(got["input"], reference["input"], GRAD_TOL, f"rank {rank} tensor-parallel input gradient vs float64")
            self.close(got["input"], single["input"], GRAD_TOL, f"rank {rank} tensor-parallel input gradient vs single-process")
            want_reference = shard(reference["weights"], rank, WORLD)
            want_single = shard(single["weights"], rank, WORLD)
            for name in self.weights:
                self.close(got["weights"][name], want_reference[name], GRAD_TOL,
                           f"rank {rank} tensor-parallel gradient of {name} vs float64", grad_scale)
                self.close(got["weights"][name], want_single[name], GRAD_TOL,
                           f"rank {rank} tensor-parallel gradient of {name} vs single-process", grad_scale)

    def test_ddp_step(self):
        block = Block(self.weights, porta_block)
        loss, grads, params = sgd_step(block, self.x, self.target)
        reference = Block({n: t.double() for n, t in self.weights.items()}, reference_block)
        reference_loss, reference_grads, reference_params = sgd_step(reference, self.x.double(), self.target.double())
        self.close(loss, reference_loss, FORWARD_TOL, "single-process loss vs float64")

        per_rank = BATCH // WORLD
        for rank, result in enumerate(self.ranks):
            mine = slice(rank * per_rank, (rank + 1) * per_rank)
            with torch.no_grad():
                local_loss = loss_of(reference_block(self.x[mine], self.weights), self.target[mine].double())
            self.close(result["loss"], local_loss, FORWARD_TOL, f"rank {rank} loss on its shard vs float64")
        # DDP averages the ranks' gradients: with equal shards and a mean loss that is the
        # gradient of the whole batch's loss. Gradients are compared at the scale of the largest
        # one (some are ~0 by symmetry: softmax ignores K's bias).
        grad_scale = max(g.abs().max().item() for g in reference_grads.values())
        for name in self.weights:
            self.assertTrue(torch.equal(self.ranks[0]["grads"][name], self.ranks[1]["grads"][name]),
                            f"gradient of {name} differs between the ranks")
            self.assertTrue(torch.equal(self.ranks[0]["params"][name], self.ranks[1]["params"][name]),
                            f"{name} after the step differs between the ranks")
            got = self.ranks[0]["grads"][name]
            self.close(got, reference_grads[name], GRAD_TOL, f"DDP gradient of {name} vs float64", grad_scale)
            self.close(got, grads[name], GRAD_TOL, f"DDP gradient of {name} vs single-process", grad_scale)
            got = self.ranks[0]["params"][name]
            self.close(got, reference_params[name], FORWARD_TOL, f"DDP {name} after the step vs float64")
            self.close(got, params[name], FORWARD_TOL, f"DDP {name} after the step vs single-process")


class Hangs(unittest.TestCase):
    """A hung peer fails the run instead of hanging it."""

    def test_collective_without_its_peer_times_out(self):
        start = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="porta_dist_") as folder:
            with self.assertRaisesRegex(mp.ProcessRaisedException, r"(?i)timed? ?out"):
                run_ranks(silent_peer_worker, (folder, 2))
        self.assertLess(time.monotonic() - start, JOIN_SECONDS)

    def test_workers_past_the_deadline_are_ended(self):
        with self.assertRaisesRegex(TimeoutError, r"did not finish within 1 s"):
            run_ranks(sleeping_worker, (600,), join_seconds=1)


if __name__ == "__main__":
    unittest.main()
