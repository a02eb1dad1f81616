"""Learning PyTorch with Examples, 1: fit y = sin(x) with a third-order polynomial, tensors and manual gradients.

As in the tutorial, except that NumPy draws the initial coefficients (torch.randn's stream is torch's own),
so the same program starts from the same point under any torch-compatible library.
"""

import argparse
import math

import numpy as np
import torch

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=2000)
parser.add_argument("--dtype", default="float32", choices=["float32", "float64"])
args = parser.parse_args()

dtype = getattr(torch, args.dtype)
device = torch.device("cpu")

# Create random input and output data
x = torch.linspace(-math.pi, math.pi, 2000, device=device, dtype=dtype)
y = torch.sin(x)

# Randomly initialize weights
rng = np.random.default_rng(0)
a, b, c, d = (torch.tensor(value, device=device, dtype=dtype) for value in rng.standard_normal(4))

learning_rate = 1e-6
for t in range(args.steps):
    # Forward pass: compute predicted y
    y_pred = a + b * x + c * x**2 + d * x**3

    # Compute and print loss
    loss = (y_pred - y).pow(2).sum().item()
    if t % 100 == 99:
        print(f"step {t} loss {loss:.10g}")

    # Backprop to compute gradients of a, b, c, d with respect to loss
    grad_y_pred = 2.0 * (y_pred - y)
    grad_a = grad_y_pred.sum()
    grad_b = (grad_y_pred * x).sum()
    grad_c = (grad_y_pred * x**2).sum()
    grad_d = (grad_y_pred * x**3).sum()

    # Update weights using gradient descent
    a -= learning_rate * grad_a
    b -= learning_rate * grad_b
    c -= learning_rate * grad_c
    d -= learning_rate * grad_d

print(f"Result: y = {a.item():.6f} + {b.item():.6f} x + {c.item():.6f} x^2 + {d.item():.6f} x^3")
