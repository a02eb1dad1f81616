"""Learning PyTorch with Examples, 2: the polynomial fit with autograd computing the gradients."""

import argparse
import math

import numpy as np
import torch

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=2000)
parser.add_argument("--dtype", default="float32", choices=["float32", "float64"])
args = parser.parse_args()

dtype = getattr(torch, args.dtype)
device = "cpu"
torch.set_default_device(device)

# Create Tensors to hold input and outputs.
x = torch.linspace(-math.pi, math.pi, 2000, dtype=dtype)
y = torch.sin(x)

# Tensors for weights; requires_grad=True asks autograd to compute their gradients.
rng = np.random.default_rng(0)
a, b, c, d = (torch.tensor(value, dtype=dtype, requires_grad=True) for value in rng.standard_normal(4))

learning_rate = 1e-6
for t in range(args.steps):
    y_pred = a + b * x + c * x**2 + d * x**3

    # loss is a Tensor of shape (); loss.item() gets the scalar value it holds.
    loss = (y_pred - y).pow(2).sum()
    if t % 100 == 99:
        print(f"step {t} loss {loss.item():.10g}")

    # Compute the gradient of loss with respect to all Tensors with requires_grad=True.
    loss.backward()

    # Manually update weights using gradient descent, outside autograd's tracking.
    with torch.no_grad():
        a -= learning_rate * a.grad
        b -= learning_rate * b.grad
        c -= learning_rate * c.grad
        d -= learning_rate * d.grad

        # Manually zero the gradients after updating weights
        a.grad = None
        b.grad = None
        c.grad = None
        d.grad = None

print(f"Result: y = {a.item():.6f} + {b.item():.6f} x + {c.item():.6f} x^2 + {d.item():.6f} x^3")
