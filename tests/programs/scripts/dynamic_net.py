"""Learning PyTorch with Examples, 7: dynamic control flow and weight sharing in forward.

Each forward pass picks 3, 4 or 5 terms at random and reuses the parameter `e` for the 4th and 5th, so
the autograd graph differs from step to step.  Python's `random` (seeded) picks, so every run picks alike.
"""

import argparse
import math
import random

import numpy as np
import torch


class DynamicNet(torch.nn.Module):
    def __init__(self, rng):
        super().__init__()
        self.a = torch.nn.Parameter(torch.tensor(rng.standard_normal()))
        self.b = torch.nn.Parameter(torch.tensor(rng.standard_normal()))
        self.c = torch.nn.Parameter(torch.tensor(rng.standard_normal()))
        self.d = torch.nn.Parameter(torch.tensor(rng.standard_normal()))
        self.e = torch.nn.Parameter(torch.tensor(rng.standard_normal()))

    def forward(self, x):
        """A third, fourth or fifth order polynomial, chosen at random; the 4th and 5th terms share `e`."""
        y = self.a + self.b * x + self.c * x**2 + self.d * x**3
        for exp in range(4, random.randint(4, 6)):
            y = y + self.e * x**exp
        return y

    def string(self):
        return (
            f"y = {self.a.item():.6f} + {self.b.item():.6f} x + {self.c.item():.6f} x^2 + {self.d.item():.6f} x^3"
            f" + {self.e.item():.6f} x^4 ? + {self.e.item():.6f} x^5 ?"
        )


parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=30000)
parser.add_argument("--dtype", default="float32", choices=["float32", "float64"])
args = parser.parse_args()
dtype = getattr(torch, args.dtype)
random.seed(0)

x = torch.linspace(-math.pi, math.pi, 2000, dtype=dtype)
y = torch.sin(x)

model = DynamicNet(np.random.default_rng(0)).to(dtype)

criterion = torch.nn.MSELoss(reduction="sum")
optimizer = torch.optim.SGD(model.parameters(), lr=1e-8, momentum=0.9)
for t in range(args.steps):
    y_pred = model(x)

    loss = criterion(y_pred, y)
    if t % 100 == 99:
        print(f"step {t} loss {loss.item():.10g}")

    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

print(f"Result: {model.string()}")
