"""Train a small CNN on real handwritten digits: README's first command.

    python -m ember.examples.digits [--epochs 10] [--out runs/digits]

The data are the UCI handwritten digits (8x8, shipped with ember, see data/README.md).  The script is
written exactly as a PyTorch user would write it (`import ember as torch`), trains with a tqdm progress
bar, reports held-out accuracy, saves a checkpoint (PyTorch's file format) and a PNG learning curve.
"""

from __future__ import annotations

import argparse
import gzip
import os
import time
from pathlib import Path

import numpy as np

import ember as torch
from ember import nn
from ember.utils.data import DataLoader, TensorDataset

DATA = Path(__file__).with_name("data") / "digits.csv.gz"


def load_digits() -> tuple[np.ndarray, np.ndarray]:
    """(images float32 (N, 1, 8, 8) scaled to [0, 1], labels int64 (N,))."""
    with gzip.open(DATA, "rt") as handle:
        table = np.loadtxt(handle, delimiter=",")
    images = (table[:, :64] / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    return images, table[:, 64].astype(np.int64)


class DigitNet(nn.Module):
    """Two 3x3 convolutions, a max-pool and a two-layer classifier."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(32 * 4 * 4, 64), nn.ReLU(), nn.Dropout(0.2),
                                        nn.Linear(64, 10))

    def forward(self, x):
        return self.classifier(self.features(x))


def evaluate(model: nn.Module, loader: DataLoader) -> float:
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for images, labels in loader:
            correct += (model(images).argmax(1) == labels).sum().item()
            total += labels.numel()
    model.train()
    return correct / total


def main(argv=None) -> float:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="runs/digits")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    images, labels = load_digits()
    order = np.random.default_rng(args.seed).permutation(len(labels))
    test_index, train_index = order[:360], order[360:]
    train = TensorDataset(torch.from_numpy(images[train_index]), torch.from_numpy(labels[train_index]))
    test = TensorDataset(torch.from_numpy(images[test_index]), torch.from_numpy(labels[test_index]))
    train_loader = DataLoader(train, batch_size=args.batch_size, shuffle=True,
                              generator=torch.Generator().manual_seed(args.seed))
    test_loader = DataLoader(test, batch_size=256)

    model = DigitNet()
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=args.lr, epochs=args.epochs,
                                                    steps_per_epoch=len(train_loader))
    loss_fn = nn.CrossEntropyLoss()

    try:
        from tqdm import tqdm
    except ImportError:  # the progress bar is optional
        tqdm = None
    history = {"loss": [], "accuracy": []}
    start = time.perf_counter()
    for epoch in range(args.epochs):
        batches = train_loader
        if tqdm is not None and not args.no_progress:
            batches = tqdm(train_loader, desc=f"epoch {epoch + 1}/{args.epochs}", leave=False)
        running = 0.0
        for images_batch, labels_batch in batches:
            optimizer.zero_grad()
            loss = loss_fn(model(images_batch), labels_batch)
            loss.backward()
            optimizer.step()
            scheduler.step()
            running += loss.item() * labels_batch.numel()
            if tqdm is not None and not args.no_progress:
                batches.set_postfix(loss=f"{loss.item():.3f}")
        history["loss"].append(running / len(train))
        history["accuracy"].append(evaluate(model, test_loader))
        print(f"epoch {epoch + 1:2d}  loss {history['loss'][-1]:.4f}  held-out accuracy "
              f"{history['accuracy'][-1]:.2%}")
    elapsed = time.perf_counter() - start
    accuracy = history["accuracy"][-1]
    print(f"trained in {elapsed:.1f} s: held-out accuracy {accuracy:.2%} on {len(test)} images")

    os.makedirs(args.out, exist_ok=True)
    checkpoint = os.path.join(args.out, "digits.pt")
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "history": history}, checkpoint)
    print(f"checkpoint: {checkpoint} (loads in PyTorch with torch.load(..., weights_only=True))")
    _plot(history, os.path.join(args.out, "learning_curve.png"))
    return accuracy


def _plot(history: dict, path: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed (pip install 'ember[examples]'): skipping the learning-curve PNG")
        return
    figure, left = plt.subplots(figsize=(6, 3.5))
    epochs = range(1, len(history["loss"]) + 1)
    left.plot(epochs, history["loss"], color="tab:blue", label="training loss")
    left.set_xlabel("epoch")
    left.set_ylabel("training loss", color="tab:blue")
    right = left.twinx()
    right.plot(epochs, [100 * a for a in history["accuracy"]], color="tab:orange", label="held-out accuracy")
    right.set_ylabel("held-out accuracy (%)", color="tab:orange")
    figure.suptitle("ember: CNN on UCI handwritten digits")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    print(f"learning curve: {path}")


if __name__ == "__main__":
    main()
