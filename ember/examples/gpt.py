"""A character-level GPT trained on text that ships with Python, then sampled.

    python -m ember.examples.gpt [--steps 300] [--compile]

The corpus is the source of a few standard-library modules (so nothing is downloaded).  The model is a
small decoder-only transformer written the usual PyTorch way (`import ember as torch`): token and position
embeddings, pre-norm blocks with causal scaled_dot_product_attention and a GELU MLP, AdamW with a cosine
schedule.  With --compile (the default when ember.compile exists) the training step is compiled.
"""

from __future__ import annotations

import argparse
import inspect
import math
import time

import ember as torch
import ember.nn.functional as F
from ember import nn


def load_corpus() -> str:
    import json
    import textwrap

    return inspect.getsource(textwrap) + inspect.getsource(json.decoder)


class Block(nn.Module):
    def __init__(self, width: int, heads: int, dropout: float) -> None:
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.norm2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width),
                                 nn.Dropout(dropout))

    def forward(self, x):
        batch, length, width = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(width, dim=2)
        q, k, v = (t.view(batch, length, self.heads, width // self.heads).transpose(1, 2) for t in (q, k, v))
        attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(attended.transpose(1, 2).reshape(batch, length, width))
        return x + self.mlp(self.norm2(x))


class GPT(nn.Module):
    def __init__(self, vocab: int, block: int, width: int = 128, layers: int = 3, heads: int = 4,
                 dropout: float = 0.0) -> None:
        super().__init__()
        self.block = block
        self.token = nn.Embedding(vocab, width)
        self.position = nn.Embedding(block, width)
        self.blocks = nn.Sequential(*[Block(width, heads, dropout) for _ in range(layers)])
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)

    def forward(self, idx, targets=None):
        positions = torch.arange(idx.shape[1])
        x = self.blocks(self.token(idx) + self.position(positions))
        logits = self.head(self.norm(x))
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))

    @torch.no_grad()
    def generate(self, idx, steps: int, temperature: float = 0.8):
        for _ in range(steps):
            logits, _ = self(idx[:, -self.block:])
            probabilities = F.softmax(logits[:, -1] / temperature, dim=-1)
            idx = torch.cat([idx, torch.multinomial(probabilities, 1)], dim=1)
        return idx


def main(argv=None) -> float:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--block", type=int, default=64)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--compile", action=argparse.BooleanOptionalAction, default=hasattr(torch, "compile"))
    parser.add_argument("--sample", type=int, default=300, help="characters to sample at the end")
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    text = load_corpus()
    chars = sorted(set(text))
    encode = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([encode[c] for c in text], dtype=torch.long)
    split = int(0.9 * len(data))
    train, valid = data[:split], data[split:]

    def batch(source):
        starts = torch.randint(len(source) - args.block - 1, (args.batch_size,))
        x = torch.stack([source[s:s + args.block] for s in starts.tolist()])
        y = torch.stack([source[s + 1:s + 1 + args.block] for s in starts.tolist()])
        return x, y

    model = GPT(len(chars), args.block)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min(1.0, (step + 1) / 20) * 0.5 * (1 + math.cos(math.pi * step / args.steps)))
    forward = torch.compile(model) if args.compile else model
    print(f"{sum(p.numel() for p in model.parameters()):,} parameters, {len(chars)} symbols, "
          f"{len(text):,} characters of corpus, compile={args.compile}")
    start = time.perf_counter()
    loss_value = float("nan")
    for step in range(args.steps):
        x, y = batch(train)
        _, loss = forward(x, y)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        loss_value = loss.item()
        if step % 50 == 0 or step == args.steps - 1:
            model.eval()
            with torch.no_grad():
                _, valid_loss = model(*batch(valid))
            model.train()
            print(f"step {step:4d}  train loss {loss_value:.3f}  valid loss {valid_loss.item():.3f}  "
                  f"({time.perf_counter() - start:.1f} s)")
    model.eval()
    prompt = torch.tensor([[encode[c] for c in "def "]], dtype=torch.long)
    sample = model.generate(prompt, args.sample)[0].tolist()
    print("---- sample ----")
    print("".join(chars[i] for i in sample))
    return loss_value


if __name__ == "__main__":
    main()
