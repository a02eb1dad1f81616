"""A character-level GPT trained on the Zen of Python (the text `import this` prints).

Token and position embeddings, pre-LayerNorm transformer blocks (causal self-attention through
F.scaled_dot_product_attention, a GELU MLP), a weight-tied output head, AdamW with weight decay on
the matrices only, and gradient clipping: a nanoGPT in miniature.  NumPy draws the initial weights and
the batch positions, so every run trains on the same batches from the same start.
"""

import argparse
import contextlib
import io
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def zen_of_python():
    """The text `import this` prints, without printing it."""
    with contextlib.redirect_stdout(io.StringIO()):
        import this
    return "".join(this.d.get(c, c) for c in this.s)


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        assert n_embd % n_head == 0
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)  # query, key, value for all heads in one matmul
        self.c_proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # re-assemble all head outputs side by side
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, n_embd):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd)
        self.gelu = nn.GELU(approximate="tanh")
        self.c_proj = nn.Linear(4 * n_embd, n_embd)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = MLP(n_embd)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class GPT(nn.Module):
    def __init__(self, vocab_size, block_size, n_layer, n_head, n_embd):
        super().__init__()
        self.block_size = block_size
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.blocks = nn.ModuleList([Block(n_embd, n_head) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight  # weight tying

    def forward(self, idx, targets=None):
        B, T = idx.size()
        pos = torch.arange(0, T, dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss

    @torch.no_grad()
    def generate(self, idx, max_new_tokens):
        """Greedy decoding (argmax), so it is deterministic."""
        for _ in range(max_new_tokens):
            logits, _ = self(idx[:, -self.block_size :])
            next_id = logits[:, -1, :].argmax(dim=-1, keepdim=True)
            idx = torch.cat((idx, next_id), dim=1)
        return idx


def init_from_numpy(model, rng, n_layer):
    """GPT-2's initialisation, drawn by NumPy: N(0, 0.02) weights, zero biases, residual projections scaled."""
    with torch.no_grad():
        for name, param in model.named_parameters():
            if param.dim() >= 2:
                std = 0.02 / math.sqrt(2 * n_layer) if name.endswith("c_proj.weight") else 0.02
                param.copy_(torch.from_numpy(rng.normal(0.0, std, tuple(param.shape)).astype(np.float32)))
            elif name.endswith("bias"):
                param.zero_()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--block-size", type=int, default=32)
    parser.add_argument("--n-layer", type=int, default=2)
    parser.add_argument("--n-head", type=int, default=4)
    parser.add_argument("--n-embd", type=int, default=48)
    args = parser.parse_args()

    text = zen_of_python()
    chars = sorted(set(text))
    stoi = {ch: i for i, ch in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
    print(f"{len(text)} characters, vocabulary of {len(chars)}")

    rng = np.random.default_rng(0)
    model = GPT(len(chars), args.block_size, args.n_layer, args.n_head, args.n_embd)
    init_from_numpy(model, rng, args.n_layer)
    print(f"{sum(p.numel() for p in model.parameters())} parameters")

    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
        lr=3e-3,
        betas=(0.9, 0.95),
    )

    model.train()
    for step in range(args.steps):
        starts = torch.from_numpy(rng.integers(0, len(data) - args.block_size - 1, size=args.batch_size))
        x = torch.stack([data[s : s + args.block_size] for s in starts.tolist()])
        y = torch.stack([data[s + 1 : s + 1 + args.block_size] for s in starts.tolist()])
        _, loss = model(x, y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        print(f"step {step} loss {loss.item():.8g} grad_norm {norm.item():.6g}")

    model.eval()
    prompt = torch.tensor([[stoi[c] for c in "Beautiful is "]], dtype=torch.long)
    sample = model.generate(prompt, 20)[0].tolist()
    print("sample:", repr("".join(chars[i] for i in sample)))


if __name__ == "__main__":
    main()
