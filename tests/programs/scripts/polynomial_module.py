"""Learning PyTorch with Examples, 6: the polynomial as a custom nn.Module, trained by SGD."""

import argparse
import math

import numpy as np
import torch


class Polynomial3(torch.nn.Module):
    def __init__(self, rng):
        """Four parameters, drawn by NumPy (the tutorial uses torch.randn) so every run starts alike."""
        super().__init__()
        self.a = torch.nn.Parameter(torch.tensor(rng.standard_normal()))
        self.b = torch.nn.Parameter(torch.tensor(rng.standard_normal()))
        self.c = torch.nn.Parameter(torch.tensor(rng.standard_normal()))
        self.d = torch.nn.Parameter(torch.tensor(rng.standard_normal()))

    def forward(self, x):
        return self.a + self.b * x + self.c * x**2 + self.d * x**3

    def string(self):
        return f"y = {self.a.item():.6f} + {self.b.item():.6f} x + {self.c.item():.6f} x^2 + {self.d.item():.6f} x^3"


parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=2000)
parser.add_argument("--dtype", default="float32", choices=["float32", "float64"])
args = parser.parse_args()
dtype = getattr(torch, args.dtype)

x = torch.linspace(-math.pi, math.pi, 2000, dtype=dtype)
y = torch.sin(x)

model = Polynomial3(np.random.default_rng(0)).to(dtype)

criterion = torch.nn.MSELoss(reduction="sum")
optimizer = torch.optim.SGD(model.parameters(), lr=1e-6)
for t in range(args.steps):
    y_pred = model(x)

    loss = criterion(y_pred, y)
    if t % 100 == 99:
        print(f"step {t} loss {loss.item():.10g}")

    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

print(f"Result: {model.string()}")
