"""Learning PyTorch with Examples, 4: the polynomial as an nn.Sequential (Linear + Flatten), MSELoss(sum)."""

import argparse
import math

import numpy as np
import torch

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=2000)
parser.add_argument("--dtype", default="float32", choices=["float32", "float64"])
args = parser.parse_args()
dtype = getattr(torch, args.dtype)

x = torch.linspace(-math.pi, math.pi, 2000, dtype=dtype)
y = torch.sin(x)

# The output y is a linear function of (x, x^2, x^3), so it can be a linear layer neural network.
# x.unsqueeze(-1) has shape (2000, 1) and p has shape (3,): broadcasting gives xx of shape (2000, 3).
p = torch.tensor([1, 2, 3])
xx = x.unsqueeze(-1).pow(p)

# Flatten(0, 1) flattens the output of the linear layer to a 1D tensor, to match the shape of `y`.
model = torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.Flatten(0, 1)).to(dtype)

# NumPy draws the initial weights (instead of Linear's own initialisation) so every run starts alike.
rng = np.random.default_rng(0)
with torch.no_grad():
    for parameter in model.parameters():
        parameter.copy_(torch.from_numpy(rng.uniform(-0.5, 0.5, tuple(parameter.shape))))

loss_fn = torch.nn.MSELoss(reduction="sum")

learning_rate = 1e-6
for t in range(args.steps):
    y_pred = model(xx)

    loss = loss_fn(y_pred, y)
    if t % 100 == 99:
        print(f"step {t} loss {loss.item():.10g}")

    model.zero_grad()
    loss.backward()

    # Update the weights using gradient descent. Each parameter is a Tensor.
    with torch.no_grad():
        for param in model.parameters():
            param -= learning_rate * param.grad

# You can access the first layer of `model` like accessing the first item of a list
linear_layer = model[0]
print(
    f"Result: y = {linear_layer.bias.item():.6f} + {linear_layer.weight[:, 0].item():.6f} x"
    f" + {linear_layer.weight[:, 1].item():.6f} x^2 + {linear_layer.weight[:, 2].item():.6f} x^3"
)
