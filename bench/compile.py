"""ember.compile benchmarks: compiled ember vs eager ember vs torch eager vs torch.compile.

    python -m bench.compile [--quick] [--case gpt]   all four, plus compile time (cold / warm cache)
    python -m bench --only compile        the harness's ember/torch table: eager rows and compiled rows

Workloads (the issue's): an elementwise-heavy block (LayerNorm + GELU + residual on 64x128x256), softmax
over 4096x1024, an MLP training step (784-1024-1024-10, batch 128; forward + backward, compiled forward + loss),
a GPT training step (bench/nn.py's gpt: 4 layers, width 256, 4 heads, block 128, batch 16, causal SDPA;
model + cross-entropy compiled whole, embeddings included; backward and SGD outside), and an Adam step over
the GPT model's parameters (`optimizer.step` compiled).
In the harness table the "ember" column of a "compiled" row is ember.compile and its "torch" column is
torch.compile (torch.compile on CPU needs a C++ compiler; a row notes it when it fails).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

import numpy as np
import torch

import ember

from .common import Workload, format_seconds, measure_interleaved
from .nn import _gpt_data, gpt_model

_rng = np.random.default_rng(0)


def _arrays():
    return {
        "block": [_rng.standard_normal(s).astype(np.float32) for s in ((64, 128, 256), (256,), (256,))],
        "softmax": [_rng.standard_normal((4096, 1024)).astype(np.float32)],
        "mlp_x": _rng.standard_normal((128, 784)).astype(np.float32),
        "mlp_y": _rng.integers(0, 10, 128),
        "gpt": _gpt_data(_rng),
    }


ARRAYS = _arrays()


def _block(lib):
    functional = lib.nn.functional

    def block(x, w, b):
        return x + functional.gelu(functional.layer_norm(x, (x.shape[-1],), w, b))

    return block


def _softmax(lib):
    return lambda x: lib.softmax(x, -1)


def _mlp(lib):
    lib.manual_seed(0)
    nn = lib.nn
    return nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))


def _compiler(lib, compiled: bool):
    if not compiled:
        return lambda fn: fn
    return lib.compile


_INITIAL_STATES: dict = {}


def _initial_state(name: str) -> dict:
    """The torch model's initial parameters as NumPy arrays (built once per case)."""
    if name not in _INITIAL_STATES:
        torch.manual_seed(0)
        model = gpt_model(torch) if name == "gpt" else _mlp(torch)
        _INITIAL_STATES[name] = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    return _INITIAL_STATES[name]


def make_case(name: str, lib, compiled: bool):
    """A zero-argument callable running the case in `lib`, eager or compiled."""
    wrap = _compiler(lib, compiled)
    if name == "block":
        tensors = [lib.from_numpy(a) for a in ARRAYS["block"]]
        fn = wrap(_block(lib))
        return lambda: fn(*tensors)
    if name == "softmax":
        x = lib.from_numpy(ARRAYS["softmax"][0])
        fn = wrap(_softmax(lib))
        return lambda: fn(x)
    if name == "adam":  # the optimizer step alone: ember.compile(optimizer.step) vs torch.compile of it
        lib.manual_seed(0)
        model = gpt_model(lib)
        for p in model.parameters():
            p.grad = lib.full_like(p, 0.01)
        optimizer = lib.optim.Adam(model.parameters(), lr=1e-3)
        return wrap(optimizer.step)
    if name == "gpt":
        lib.manual_seed(0)
        model = gpt_model(lib)
        x, y = (lib.from_numpy(np.ascontiguousarray(a)) for a in ARRAYS["gpt"])
    else:
        model = _mlp(lib)
        x = lib.from_numpy(ARRAYS["mlp_x"])
        y = lib.from_numpy(ARRAYS["mlp_y"])
    # both libraries start from torch's initial weights, so the two runs do the same arithmetic
    model.load_state_dict({k: lib.from_numpy(v.copy()) for k, v in _initial_state(name).items()})

    def model_loss(inputs, targets):
        logits = model(inputs)
        return lib.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))

    # the whole model and its loss are one compiled graph (embeddings included: their token ids are graph
    # values); backward() and the SGD update run outside (a backward() inside is a graph break)
    compute_loss = wrap(model_loss)
    params = list(model.parameters())

    def step():
        loss = compute_loss(x, y)
        for p in params:
            p.grad = None
        loss.backward()
        with lib.no_grad():
            for p in params:
                p.add_(p.grad, alpha=-1e-3)
        return loss

    return step


CASES = [("block", "LayerNorm+GELU+residual 64x128x256"), ("softmax", "softmax 4096x1024"),
         ("mlp", "MLP step 784-1024-1024-10 b128"), ("gpt", "GPT step 4x256 h4 T128 b16"),
         ("adam", "Adam step, GPT's 3.2M params")]


def _workloads() -> list[Workload]:
    rows = []
    for key, title in CASES:
        rows.append(Workload(f"compile eager: {title}", make_case(key, ember, False), make_case(key, torch, False)))
        rows.append(Workload(f"compile compiled: {title}", make_case(key, ember, True), make_case(key, torch, True),
                             note="ember.compile vs torch.compile"))
    return rows


WORKLOADS = _workloads()


def compile_times(key: str) -> tuple[float, float, float]:
    """Compile overhead of the first call of a fresh ember.compile (its time minus the median of three steady
    calls): cold (empty kernel cache) and warm (kernels on disk), and that steady time.  A warm overhead
    smaller than the steady calls' spread can come out slightly negative: it is within noise."""
    from ember._compile import codegen

    previous = os.environ.get("EMBER_CACHE_DIR")
    with tempfile.TemporaryDirectory() as directory:
        os.environ["EMBER_CACHE_DIR"] = directory
        try:
            times = []
            for _ in range(2):
                ember.compiler.reset()
                codegen._built_libraries.clear()  # forget loaded libraries: the warm run must come from disk
                fn = make_case(key, ember, True)
                start = time.perf_counter()
                fn()
                times.append(time.perf_counter() - start)
            steady_times = []
            for _ in range(3):  # steady calls: the first call's extra time over their median is the overhead
                start = time.perf_counter()
                fn()
                steady_times.append(time.perf_counter() - start)
            steady = sorted(steady_times)[1]
        finally:
            if previous is None:
                os.environ.pop("EMBER_CACHE_DIR", None)
            else:
                os.environ["EMBER_CACHE_DIR"] = previous
    return times[0] - steady, times[1] - steady, steady


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    rounds, min_time = (3, 0.05) if "--quick" in argv else (7, 0.2)
    cases = CASES
    if "--case" in argv:  # --case gpt: one workload
        wanted = argv[argv.index("--case") + 1]
        cases = [c for c in CASES if c[0] == wanted]
    print(f"threads: torch {torch.get_num_threads()}, cpus {os.cpu_count()}")
    header = f"{'workload':36} {'ember eager':>12} {'ember.compile':>14} {'torch eager':>12} {'torch.compile':>14}"
    print(header)
    print("-" * len(header))
    for key, title in cases:
        fns, notes = {}, []
        for label, lib, compiled in (("ember eager", ember, False), ("ember.compile", ember, True),
                                     ("torch eager", torch, False), ("torch.compile", torch, True)):
            fn = make_case(key, lib, compiled)
            try:
                fn()
                fn()
                fns[label] = fn
            except Exception as error:  # noqa: BLE001 - torch.compile without a working toolchain: note it
                notes.append(f"{label} failed: {type(error).__name__}: {str(error).splitlines()[0][:80]}")
        timings = dict(zip(fns, measure_interleaved(list(fns.values()), rounds=rounds, min_time=min_time)))
        cells = [format_seconds(timings[label].median) if label in timings else "-"
                 for label in ("ember eager", "ember.compile", "torch eager", "torch.compile")]
        print(f"{title:36} {cells[0]:>12} {cells[1]:>14} {cells[2]:>12} {cells[3]:>14}  {'; '.join(notes)}")
    print()
    for key, title in cases:
        cold, warm, steady = compile_times(key)
        print(f"ember.compile overhead of the first call, {title}: cold cache {format_seconds(cold)}, "
              f"warm cache {format_seconds(warm)} (over a steady call of {format_seconds(steady)})")


if __name__ == "__main__":
    main()
