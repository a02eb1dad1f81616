"""GPU benchmarks: ember on CuPy vs torch on CUDA (when torch has CUDA on the machine), in one run.

    python bench/cuda.py            # needs a GPU; scripts/gpu_check.sh runs it
    python bench/cuda.py --dry-run  # checks the script's own plumbing on the emulated cuda device

Prints matmul TFLOP/s, elementwise bandwidth GB/s and an MLP training step's milliseconds, with torch's
figures and the ratio.  UNVERIFIED until run on a GPU (docs/cuda.md).
"""

from __future__ import annotations

import argparse
import time

import ember


def _timed(fn, sync, repeats: int) -> float:
    fn()
    sync()  # warm-up: kernels compile (CuPy) and the memory pool fills
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    sync()
    return (time.perf_counter() - start) / repeats


def _cases(lib, device, n, elements, batch):
    x = lib.randn(n, n, device=device)
    a, b = lib.randn(elements, device=device), lib.randn(elements, device=device)
    model = lib.nn.Sequential(lib.nn.Linear(1024, 4096), lib.nn.ReLU(), lib.nn.Linear(4096, 1024)).to(device)
    optimizer = lib.optim.SGD(model.parameters(), lr=0.01)
    inputs, target = lib.randn(batch, 1024, device=device), lib.randn(batch, 1024, device=device)

    def step():
        optimizer.zero_grad()
        lib.nn.functional.mse_loss(model(inputs), target).backward()
        optimizer.step()

    return {
        "matmul": (lambda: x @ x, 2 * n**3 / 1e12, "TFLOP/s"),
        "elementwise a*b+a": (lambda: a * b + a, 4 * elements * 4 / 1e9, "GB/s"),  # 2 reads + 1 write + reuse
        "mlp train step": (step, None, "ms"),
    }


def run(lib, device, sync, sizes, repeats) -> dict:
    results = {}
    for name, (fn, work, unit) in _cases(lib, device, *sizes).items():
        seconds = _timed(fn, sync, repeats)
        results[name] = (seconds * 1000 if work is None else work / seconds, unit)
    return results


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dry-run", action="store_true", help="tiny sizes on the emulated cuda device")
    args = parser.parse_args()
    if args.dry_run:
        from ember import _backends

        _backends.emulate_cuda(True)
        sizes, repeats = (64, 1 << 12, 8), 2
    else:
        if not ember.cuda.is_available():
            raise SystemExit("bench/cuda.py needs a GPU (ember.cuda.is_available() is False); try --dry-run")
        sizes, repeats = (4096, 1 << 26, 256), 10
    ours = run(ember, "cuda", ember.cuda.synchronize, sizes, repeats)
    theirs = {}
    try:
        import torch

        if torch.cuda.is_available() and not args.dry_run:
            theirs = run(torch, "cuda", torch.cuda.synchronize, sizes, repeats)
    except ImportError:
        pass
    print(f"{'case':22} {'ember':>12} {'torch':>12} {'ember/torch':>12}")
    for name, (value, unit) in ours.items():
        other = theirs.get(name, (None, unit))[0]
        ratio = "" if other is None else f"{(other / value if unit == 'ms' else value / other):.2f}"
        torch_text = "" if other is None else f"{other:.2f}"
        print(f"{name:22} {value:9.2f} {unit:<4}{torch_text:>10} {ratio:>12}")


if __name__ == "__main__":
    main()
