"""A small CNN trained on synthetic images: Conv2d / BatchNorm2d / ReLU / MaxPool2d / Linear, SGD with momentum.

The images are class-dependent blobs drawn by NumPy (a fixed seed), so the network has something to learn
and every run sees the same data.  Initial weights come from NumPy too, for the same reason.
"""

import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class SmallCNN(nn.Module):
    def __init__(self, num_classes=4):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, kernel_size=3, padding=1),
            nn.BatchNorm2d(8),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(16),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
        )
        self.classifier = nn.Linear(16 * 4 * 4, num_classes)

    def forward(self, x):
        x = self.features(x)
        x = torch.flatten(x, 1)
        return self.classifier(x)


def init_from_numpy(model, seed=0):
    """Kaiming-uniform-like weights drawn by NumPy, in module order."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, (nn.Conv2d, nn.Linear)):
                fan_in = module.weight[0].numel()
                bound = 1.0 / np.sqrt(fan_in)
                module.weight.copy_(torch.from_numpy(rng.uniform(-bound, bound, tuple(module.weight.shape))))
                if module.bias is not None:
                    module.bias.copy_(torch.from_numpy(rng.uniform(-bound, bound, tuple(module.bias.shape))))


def make_data(count, num_classes, rng):
    """Images of shape (3, 16, 16): a bright blob whose position and colour depend on the class, plus noise."""
    labels = rng.integers(0, num_classes, size=count)
    images = rng.normal(0.0, 1.0, size=(count, 3, 16, 16)).astype(np.float32)
    for i, label in enumerate(labels):
        row, col = divmod(int(label), 2)
        images[i, label % 3, row * 8 : row * 8 + 8, col * 8 : col * 8 + 8] += 0.3
    return torch.from_numpy(images), torch.from_numpy(labels)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=16)
    args = parser.parse_args()

    rng = np.random.default_rng(1)
    images, labels = make_data(256, 4, rng)
    model = SmallCNN(num_classes=4)
    init_from_numpy(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9, weight_decay=1e-4)
    criterion = nn.CrossEntropyLoss()

    model.train()
    for step in range(args.steps):
        start = (step * args.batch_size) % len(images)
        x = images[start : start + args.batch_size]
        y = labels[start : start + args.batch_size]
        optimizer.zero_grad()
        logits = model(x)
        loss = criterion(logits, y)
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.8g}")

    model.eval()
    with torch.no_grad():
        logits = model(images)
        accuracy = (logits.argmax(dim=1) == labels).float().mean().item()
        eval_loss = F.cross_entropy(logits, labels).item()
    print(f"eval loss {eval_loss:.8g} accuracy {accuracy:.4f}")


if __name__ == "__main__":
    main()
