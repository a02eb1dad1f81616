"""Training-step benchmarks: forward + backward + SGD update of four small models, ember vs torch.

Each workload is one training step, `zero_grad(); loss = loss_fn(model(x), y); loss.backward();
optimizer.step()`, returning the loss, on four models that stress different parts of the framework:

- mlp:  784-1024-1024-10 ReLU MLP, batch 128 -- three big GEMMs; the floor is BLAS, ember's
        overhead should vanish (a NumPy version of the same step is timed as that floor).
- cnn:  a small ResNet (conv stem + 3 BasicBlocks, 16/32/64 channels, BatchNorm) on 3x32x32,
        batch 64 -- im2col convolution and batch-norm passes.
- gpt:  4-layer, 256-wide, 4-head causal transformer, block 128, batch 16, vocab 64 -- attention,
        LayerNorm, GELU, many mid-size ops.
- lstm: 2-layer LSTM, hidden 256, 64 steps, batch 32 -- a time loop of small (32 x 1024) steps, so
        whatever a step costs beyond its GEMM (op dispatch, autograd nodes) is paid 128 times.

Each model is written once against a library namespace `lib` (ember and torch share the API) and
built for both; torch's freshly initialised weights are copied into ember's model, so both start from
the same point and the probe's losses agree.  Models, data and optimizers are built on first call, so
importing this module costs nothing when other workloads are selected.  Every timed call updates the
weights, as real training does (lr is small, so the losses stay finite over thousands of steps).

`python -m bench.nn [NAME ...]` (instead of `python -m bench --only nn`) times the same steps in CPU
time (time.process_time) with every library on one thread: on a shared, loaded machine the wall-clock
ratio swings by 2x between runs, while single-threaded CPU time barely moves (docs/performance.md).
`python -m bench.nn --ops [NAME ...]` splits ember's step by op instead.
"""

from __future__ import annotations

import os
import statistics
import sys
import time

if __name__ == "__main__":  # CPU-time mode is single-threaded; BLAS reads these when NumPy is imported
    for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_variable] = "1"

import numpy as np
import torch

import ember

from .common import Workload

LEARNING_RATE = 1e-2
MOMENTUM = 0.9


# ---------------------------------------------------------------- models, written once against `lib`


def mlp_model(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))


def resnet_model(lib):
    """conv stem, then three stages of one BasicBlock each (16/32/64 channels, stride 2 between stages),
    global average pool, linear 10."""
    nn = lib.nn

    class BasicBlock(nn.Module):
        def __init__(self, inputs, outputs, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(inputs, outputs, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(outputs)
            self.conv2 = nn.Conv2d(outputs, outputs, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(outputs)
            self.shortcut = None
            if stride != 1 or inputs != outputs:
                self.shortcut = nn.Sequential(
                    nn.Conv2d(inputs, outputs, 1, stride, bias=False), nn.BatchNorm2d(outputs)
                )

        def forward(self, x):
            out = lib.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return lib.relu(out + (x if self.shortcut is None else self.shortcut(x)))

    class ResNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
            self.stages = nn.Sequential(BasicBlock(16, 16, 1), BasicBlock(16, 32, 2), BasicBlock(32, 64, 2))
            self.head = nn.Linear(64, 10)

        def forward(self, x):
            return self.head(self.stages(self.stem(x)).mean((2, 3)))

    return ResNet()


GPT_VOCAB, GPT_WIDTH, GPT_HEADS, GPT_LAYERS, GPT_BLOCK = 64, 256, 4, 4, 128


def gpt_model(lib):
    """A GPT-2-shaped decoder: pre-LayerNorm blocks of causal attention and a 4x GELU MLP, untied head."""
    nn = lib.nn
    F = lib.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(GPT_WIDTH)
            self.qkv = nn.Linear(GPT_WIDTH, 3 * GPT_WIDTH)
            self.proj = nn.Linear(GPT_WIDTH, GPT_WIDTH)
            self.ln2 = nn.LayerNorm(GPT_WIDTH)
            self.fc = nn.Linear(GPT_WIDTH, 4 * GPT_WIDTH)
            self.fc_out = nn.Linear(4 * GPT_WIDTH, GPT_WIDTH)

        def forward(self, x):
            batch, length, width = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(width, dim=2)
            heads = [t.view(batch, length, GPT_HEADS, width // GPT_HEADS).transpose(1, 2) for t in (q, k, v)]
            attended = F.scaled_dot_product_attention(*heads, is_causal=True)
            x = x + self.proj(attended.transpose(1, 2).reshape(batch, length, width))
            return x + self.fc_out(F.gelu(self.fc(self.ln2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.token = nn.Embedding(GPT_VOCAB, GPT_WIDTH)
            self.position = nn.Embedding(GPT_BLOCK, GPT_WIDTH)
            self.blocks = nn.Sequential(*[Block() for _ in range(GPT_LAYERS)])
            self.ln_f = nn.LayerNorm(GPT_WIDTH)
            self.head = nn.Linear(GPT_WIDTH, GPT_VOCAB, bias=False)

        def forward(self, idx):
            positions = lib.arange(idx.shape[1])
            x = self.blocks(self.token(idx) + self.position(positions))
            return self.head(self.ln_f(x))

    return GPT()


def lstm_model(lib):
    nn = lib.nn

    class Recurrent(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(64, 256, num_layers=2)
            self.head = nn.Linear(256, 64)

        def forward(self, x):
            return self.head(self.lstm(x)[0])

    return Recurrent()


# ---------------------------------------------------------------- data and loss per model


def _mlp_data(rng):
    return rng.standard_normal((128, 784)).astype(np.float32), rng.integers(0, 10, 128)


def _cnn_data(rng):
    return rng.standard_normal((64, 3, 32, 32)).astype(np.float32), rng.integers(0, 10, 64)


def _gpt_data(rng):
    tokens = rng.integers(0, GPT_VOCAB, (16, GPT_BLOCK + 1))
    return tokens[:, :-1], tokens[:, 1:]


def _lstm_data(rng):
    # (sequence, batch, features): nn.LSTM's default layout; the target is a regression onto 64 values per step
    return rng.standard_normal((64, 32, 64)).astype(np.float32), rng.standard_normal((64, 32, 64)).astype(np.float32)


def _classification_loss(lib, output, target):
    return lib.nn.functional.cross_entropy(output.reshape(-1, output.shape[-1]), target.reshape(-1))


def _regression_loss(lib, output, target):
    return lib.nn.functional.mse_loss(output, target)


# ---------------------------------------------------------------- the training step


def _ember_copy(build, torch_model):
    """ember's model with torch's initial weights and buffers (so both do the same arithmetic)."""
    model = build(ember)
    state = {name: ember.from_numpy(value.detach().numpy().copy()) for name, value in torch_model.state_dict().items()}
    model.load_state_dict(state)
    return model


def _step_function(lib, model, inputs, target, loss_fn):
    optimizer = lib.optim.SGD(model.parameters(), lr=LEARNING_RATE, momentum=MOMENTUM)
    model.train()

    def step():
        optimizer.zero_grad()
        loss = loss_fn(lib, model(inputs), target)
        loss.backward()
        optimizer.step()
        return loss.detach()

    return step


class _LazyPair:
    """Builds torch's model, ember's copy of it, the data and both optimizers on the first call of either side."""

    def __init__(self, build, data, loss_fn):
        self.build, self.data, self.loss_fn = build, data, loss_fn
        self.steps = None

    def _ensure(self):
        if self.steps is None:
            torch.manual_seed(0)
            torch_model = self.build(torch)
            ember_model = _ember_copy(self.build, torch_model)
            inputs, target = self.data(np.random.default_rng(0))
            self.steps = {
                "torch": _step_function(
                    torch, torch_model, torch.from_numpy(inputs), torch.from_numpy(target), self.loss_fn
                ),
                "ember": _step_function(
                    ember, ember_model, ember.from_numpy(inputs), ember.from_numpy(target), self.loss_fn
                ),
            }
        return self.steps

    def side(self, library: str):
        return lambda: self._ensure()[library]()


# ---------------------------------------------------------------- the NumPy floor for the MLP


def _lazy(factory):
    """A zero-argument callable that builds the real one (`factory()`) on its first call."""
    built = []

    def call():
        if not built:
            built.append(factory())
        return built[0]()

    return call


def _numpy_mlp_step():
    """The same MLP step by hand in NumPy (the minimum ember's kernels can reach): 6 GEMMs, ReLU masks, softmax."""
    rng = np.random.default_rng(1)
    sizes = [(784, 1024), (1024, 1024), (1024, 10)]
    weights = [(rng.standard_normal((o, i)) / np.sqrt(i)).astype(np.float32) for i, o in sizes]
    biases = [np.zeros(o, np.float32) for _, o in sizes]
    x, y = _mlp_data(np.random.default_rng(0))
    rows = np.arange(len(y))

    def step():
        activations = [x]
        for i, (w, b) in enumerate(zip(weights, biases)):
            out = activations[-1] @ w.T + b
            activations.append(np.maximum(out, 0) if i < 2 else out)
        logits = activations[-1]
        shifted = logits - logits.max(1, keepdims=True)
        probabilities = np.exp(shifted)
        probabilities /= probabilities.sum(1, keepdims=True)
        loss = -np.log(probabilities[rows, y]).mean()
        grad = probabilities
        grad[rows, y] -= 1
        grad /= len(y)
        for i in (2, 1, 0):
            w = weights[i]
            grad_w = grad.T @ activations[i]
            grad_b = grad.sum(0)
            if i:
                grad = (grad @ w) * (activations[i] > 0)
            w -= LEARNING_RATE * grad_w
            biases[i] -= LEARNING_RATE * grad_b
        return loss

    return step


def _workload(name, build, data, loss_fn, target, numpy_fn=None, note=""):
    pair = _LazyPair(build, data, loss_fn)
    return Workload(
        name=name, ember_fn=pair.side("ember"), torch_fn=pair.side("torch"), numpy_fn=numpy_fn, target=target, note=note
    )


WORKLOADS = [
    _workload(
        "nn mlp train step",
        mlp_model,
        _mlp_data,
        _classification_loss,
        1.3,
        numpy_fn=_lazy(_numpy_mlp_step),
        note="784-1024-1024-10, batch 128; numpy = hand-written step, no momentum",
    ),
    _workload(
        "nn cnn train step",
        resnet_model,
        _cnn_data,
        _classification_loss,
        2.0,
        note="ResNet 16/32/64 + BatchNorm, 3x32x32, batch 64",
    ),
    _workload(
        "nn gpt train step",
        gpt_model,
        _gpt_data,
        _classification_loss,
        1.5,
        note="4 layers, width 256, 4 heads, 128 tokens, batch 16, vocab 64",
    ),
    _workload(
        "nn lstm train step",
        lstm_model,
        _lstm_data,
        _regression_loss,
        2.0,
        note="2 layers, hidden 256, 64 steps, batch 32, MSE",
    ),
]


# ---------------------------------------------------------------- CPU-time mode: python -m bench.nn [NAME ...]


def cpu_times(workload: Workload, steps: int = 7) -> dict:
    """Median CPU seconds per step for each library, alternating ember and torch step by step (2 warm-up steps)."""
    functions = {"torch": workload.torch_fn, "ember": workload.ember_fn}
    for function in functions.values():
        function()
        function()
    samples = {name: [] for name in functions}
    for step in range(steps):
        for name in sorted(functions, reverse=step % 2 == 1):
            start = time.process_time()
            functions[name]()
            samples[name].append(time.process_time() - start)
    return {name: statistics.median(values) for name, values in samples.items()}


def op_times(workload: Workload, steps: int = 3, top: int = 12) -> None:
    """Print ember's CPU time per step inside each op's array implementation, by op name (`--ops`).

    Wraps the one dispatch function that runs impls, so the rest of the step (module and functional Python,
    autograd recording, the backward engine) shows as the remainder.
    """
    import collections

    from ember import _dispatch

    spent, calls = collections.Counter(), collections.Counter()
    original = _dispatch._call_backend

    def timed(op, *args):
        start = time.process_time()
        try:
            return original(op, *args)
        finally:
            spent[op.name] += time.process_time() - start
            calls[op.name] += 1

    workload.ember_fn()
    _dispatch._call_backend = timed
    try:
        start = time.process_time()
        for _ in range(steps):
            workload.ember_fn()
        total = (time.process_time() - start) / steps
    finally:
        _dispatch._call_backend = original
    inside = sum(spent.values()) / steps
    print(
        f"{workload.name}: {total * 1e3:.1f} ms/step, {inside * 1e3:.1f} ms in op impls, "
        f"{(total - inside) * 1e3:.1f} ms outside"
    )
    for name, seconds in spent.most_common(top):
        print(f"    {name:40s} {seconds / steps * 1e3:8.1f} ms {calls[name] // steps:6d} calls")


def main(argv=None) -> int:
    import torch as torch_module

    torch_module.set_num_threads(1)
    names = list(argv if argv is not None else sys.argv[1:])
    by_op = "--ops" in names
    names = [name for name in names if name != "--ops"]
    print(f"CPU time per training step, 1 thread each; load {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    for workload in WORKLOADS:
        if names and not any(name in workload.name for name in names):
            continue
        if by_op:
            op_times(workload)
            continue
        times = cpu_times(workload)
        ratio = times["ember"] / times["torch"]
        target = f"(target <= {workload.target:g}x)" if workload.target else ""
        print(
            f"{workload.name:20s} torch {times['torch'] * 1e3:8.1f} ms  ember {times['ember'] * 1e3:8.1f} ms  "
            f"ratio {ratio:.2f}x {target}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
