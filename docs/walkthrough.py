"""One training step of a tiny model, traced through ember's layers: the map for the next engineer.

Run it:  python docs/walkthrough.py      (CI runs it too: tests/test_walkthrough.py)

Each section prints what happens underneath a line of ordinary PyTorch-style code, and names the file
that does it.  Read it top to bottom next to DESIGN.md.
"""

from __future__ import annotations

import os

import numpy as np

import ember as torch
from ember import _dispatch, nn


def section(title: str) -> None:
    print(f"\n=== {title} " + "=" * max(0, 70 - len(title)))


# 1. A tensor is a NumPy array plus a dtype, a device and autograd state (ember/_tensor.py).
section("1. tensors: ember/_tensor.py, ember/_dtype.py")
x = torch.tensor([[0.5, -1.0, 2.0]])
print("x =", x, "| backing array:", type(x._data).__name__, x._data.dtype, "| device:", x.device)
print("promotion (NOTE [ Weak scalars ]): int tensor * 2.5 ->", (torch.arange(3) * 2.5).dtype,
      "; float16 tensor + float64 0-d ->", (torch.ones(2, dtype=torch.float16) + torch.tensor(1.0,
                                                                                          dtype=torch.float64)).dtype)

# 2. Every op is one OpDef, called through one dispatch function (ember/_dispatch.py).
section("2. dispatch: ember/_dispatch.py call() -> OpDef.impl(xp, ...)")
op = _dispatch.call.__doc__
print("call():", op)
recorded = []


class Printer:
    """A stand-in for the compile tracer: dispatch reports every op call to `tracer.record`."""

    def graph_break(self, reason, tensor=None):
        print(f"  (a value read into Python: {reason})")

    def record(self, op, args, params, results):
        shapes = [tuple(a.shape) if hasattr(a, "shape") else a for a in args]
        recorded.append(op.name)
        print(f"  {op.name:<14} inputs {shapes} params {sorted(params)} -> grad node "
              f"{getattr(results, 'grad_fn', None).__class__.__name__ if hasattr(results, 'grad_fn') else '-'}")


# 3. A module's forward is nn.functional calls, which are op calls (ember/nn/).
section("3. nn: Linear -> F.linear -> OpDef 'linear' (ember/nn/modules/linear.py, ember/_ops/nn_ops.py)")
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
target = torch.tensor([1])
_dispatch.tracer = Printer()
try:
    loss = nn.functional.cross_entropy(model(x), target)
finally:
    _dispatch.tracer = None
print("loss =", loss)

# 4. Autograd: each op call with a grad-requiring input recorded a node; backward walks them.
section("4. autograd: ember/_autograd/node.py, engine.py")
node, depth = loss.grad_fn, 0
while node is not None and depth < 6:
    print("  " * depth + node.name())
    node = next((n for n, _ in node.next_functions if n is not None), None)
    depth += 1
loss.backward()
print("gradient of the first layer's weight:\n", model[0].weight.grad)
print("gradients are summed back over broadcast dims centrally (NOTE [ Gradient unbroadcasting ]), so",
      "the bias gradient has the bias's shape:", tuple(model[0].bias.grad.shape))

# 5. The optimizer updates the parameters in place, a whole param group at a time (ember/optim/).
section("5. optim: ember/optim/")
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
before = model[0].weight.detach().clone()
optimizer.step()
print("weight changed by", float((model[0].weight - before).abs().max()), "| version counter now",
      model[0].weight._version)

# 6. Backends: the same OpDef.impl runs on NumPy (cpu), CuPy (cuda) or computes shapes only (meta).
section("6. backends: ember/_backends/")
meta = torch.empty(64, 1000, device="meta")
print("meta device, no data:", (meta @ torch.empty(1000, 10, device="meta")).shape)
print("cuda available:", torch.cuda.is_available())

# 7. Compile: the same op calls, recorded into a graph and replayed with fused kernels (ember/_compile/).
section("7. compile: ember/_compile/")
if hasattr(torch, "compile"):
    compiled = torch.compile(model)
    out = compiled(x)
    print("compiled output equals eager:", bool(np.allclose(out.detach().numpy(), model(x).detach().numpy())))
else:
    print("ember.compile is not available in this build")

print("\nops dispatched in the forward above:", recorded)
if os.environ.get("EMBER_WALKTHROUGH_STRICT"):
    assert "linear" in recorded and "relu" in recorded
