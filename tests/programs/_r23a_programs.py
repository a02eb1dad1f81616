"""Round 23a's real programs, each written once against a library `lib` (torch or ember) the way its original is:
karpathy/nanoGPT (model.py + train.py), torchvision's ResNet, a timm-style ViT and a diffusers-style DDPM step.

Each program is `run(lib, data, state, wrap, workdir) -> (record, state)`: it builds its modules (loading `state`,
name -> state_dict of NumPy arrays, torch's initial weights, when given), trains a few steps as the original does and
records losses, outputs and final parameters into a dict of NumPy arrays.  `wrap` stands for torch.compile (identity
for eager runs).  Randomness the two libraries cannot share (noise, timesteps, sampling) is passed in as data.
"""

from __future__ import annotations

import inspect
import math
import os
from contextlib import nullcontext
from dataclasses import dataclass
from functools import partial

import numpy as np
from _records import _np, record_params, setup  # noqa: F401 - the programs' shared recording helpers

# ----------------------------------------------------------------------------------------------------------------
# karpathy/nanoGPT: model.py
# ----------------------------------------------------------------------------------------------------------------


@dataclass
class GPTConfig:
    block_size: int = 1024
    vocab_size: int = 50304  # GPT-2 vocab_size of 50257, padded up to nearest multiple of 64 for efficiency
    n_layer: int = 12
    n_head: int = 12
    n_embd: int = 768
    dropout: float = 0.0
    bias: bool = True  # True: bias in Linears and LayerNorms, like GPT-2. False: a bit better and faster


def nanogpt_module(lib, flash=True):
    torch = lib
    nn = torch.nn
    F = torch.nn.functional

    class LayerNorm(nn.Module):
        """LayerNorm but with an optional bias. PyTorch doesn't support simply bias=False"""

        def __init__(self, ndim, bias):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(ndim))
            self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

        def forward(self, input):
            return F.layer_norm(input, self.weight.shape, self.weight, self.bias, 1e-5)

    class CausalSelfAttention(nn.Module):
        def __init__(self, config):
            super().__init__()
            assert config.n_embd % config.n_head == 0
            # key, query, value projections for all heads, but in a batch
            self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
            # output projection
            self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
            # regularization
            self.attn_dropout = nn.Dropout(config.dropout)
            self.resid_dropout = nn.Dropout(config.dropout)
            self.n_head = config.n_head
            self.n_embd = config.n_embd
            self.dropout = config.dropout
            # flash attention make GPU go brrrrr but support is only in PyTorch >= 2.0
            self.flash = hasattr(torch.nn.functional, "scaled_dot_product_attention") and flash
            if not self.flash:
                # causal mask to ensure that attention is only applied to the left in the input sequence
                self.register_buffer("bias", torch.tril(torch.ones(config.block_size, config.block_size))
                                     .view(1, 1, config.block_size, config.block_size))

        def forward(self, x):
            B, T, C = x.size()  # batch size, sequence length, embedding dimensionality (n_embd)

            # calculate query, key, values for all heads in batch and move head forward to be the batch dim
            q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
            k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
            q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
            v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)

            # causal self-attention; Self-attend: (B, nh, T, hs) x (B, nh, hs, T) -> (B, nh, T, T)
            if self.flash:
                # efficient attention using Flash Attention CUDA kernels
                y = torch.nn.functional.scaled_dot_product_attention(
                    q, k, v, attn_mask=None, dropout_p=self.dropout if self.training else 0, is_causal=True)
            else:
                # manual implementation of attention
                att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
                att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
                att = F.softmax(att, dim=-1)
                att = self.attn_dropout(att)
                y = att @ v  # (B, nh, T, T) x (B, nh, T, hs) -> (B, nh, T, hs)
            y = y.transpose(1, 2).contiguous().view(B, T, C)  # re-assemble all head outputs side by side

            # output projection
            y = self.resid_dropout(self.c_proj(y))
            return y

    class MLP(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
            self.gelu = nn.GELU()
            self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
            self.dropout = nn.Dropout(config.dropout)

        def forward(self, x):
            x = self.c_fc(x)
            x = self.gelu(x)
            x = self.c_proj(x)
            x = self.dropout(x)
            return x

    class Block(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.ln_1 = LayerNorm(config.n_embd, bias=config.bias)
            self.attn = CausalSelfAttention(config)
            self.ln_2 = LayerNorm(config.n_embd, bias=config.bias)
            self.mlp = MLP(config)

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            x = x + self.mlp(self.ln_2(x))
            return x

    class GPT(nn.Module):
        def __init__(self, config):
            super().__init__()
            assert config.vocab_size is not None
            assert config.block_size is not None
            self.config = config

            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(config.vocab_size, config.n_embd),
                wpe=nn.Embedding(config.block_size, config.n_embd),
                drop=nn.Dropout(config.dropout),
                h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
                ln_f=LayerNorm(config.n_embd, bias=config.bias),
            ))
            self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
            # with weight tying when using torch.compile() some warnings get generated:
            # "UserWarning: functional_call was passed multiple values for tied weights.
            # This behavior is deprecated and will be an error in future versions"
            # not 100% sure what this is, so far seems to be harmless. TODO investigate
            self.transformer.wte.weight = self.lm_head.weight  # https://paperswithcode.com/method/weight-tying

            # init all weights
            self.apply(self._init_weights)
            # apply special scaled init to the residual projections, per GPT-2 paper
            for pn, p in self.named_parameters():
                if pn.endswith("c_proj.weight"):
                    torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

        def get_num_params(self, non_embedding=True):
            n_params = sum(p.numel() for p in self.parameters())
            if non_embedding:
                n_params -= self.transformer.wpe.weight.numel()
            return n_params

        def _init_weights(self, module):
            if isinstance(module, nn.Linear):
                torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
                if module.bias is not None:
                    torch.nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Embedding):
                torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

        def forward(self, idx, targets=None):
            device = idx.device
            b, t = idx.size()
            assert t <= self.config.block_size, \
                f"Cannot forward sequence of length {t}, block size is only {self.config.block_size}"
            pos = torch.arange(0, t, dtype=torch.long, device=device)  # shape (t)

            # forward the GPT model itself
            tok_emb = self.transformer.wte(idx)  # token embeddings of shape (b, t, n_embd)
            pos_emb = self.transformer.wpe(pos)  # position embeddings of shape (t, n_embd)
            x = self.transformer.drop(tok_emb + pos_emb)
            for block in self.transformer.h:
                x = block(x)
            x = self.transformer.ln_f(x)

            if targets is not None:
                # if we are given some desired targets also calculate the loss
                logits = self.lm_head(x)
                loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
            else:
                # inference-time mini-optimization: only forward the lm_head on the very last position
                logits = self.lm_head(x[:, [-1], :])  # note: using list [-1] to preserve the time dim
                loss = None

            return logits, loss

        def crop_block_size(self, block_size):
            # model surgery to decrease the block size if necessary
            assert block_size <= self.config.block_size
            self.config.block_size = block_size
            self.transformer.wpe.weight = nn.Parameter(self.transformer.wpe.weight[:block_size])
            for block in self.transformer.h:
                if hasattr(block.attn, "bias"):
                    block.attn.bias = block.attn.bias[:, :, :block_size, :block_size]

        def configure_optimizers(self, weight_decay, learning_rate, betas, device_type):
            # start with all of the candidate parameters
            param_dict = {pn: p for pn, p in self.named_parameters()}
            # filter out those that do not require grad
            param_dict = {pn: p for pn, p in param_dict.items() if p.requires_grad}
            # create optim groups. Any parameters that is 2D will be weight decayed, otherwise no.
            # i.e. all weight tensors in matmuls + embeddings decay, all biases and layernorms don't.
            decay_params = [p for n, p in param_dict.items() if p.dim() >= 2]
            nodecay_params = [p for n, p in param_dict.items() if p.dim() < 2]
            optim_groups = [
                {"params": decay_params, "weight_decay": weight_decay},
                {"params": nodecay_params, "weight_decay": 0.0},
            ]
            num_decay_params = sum(p.numel() for p in decay_params)
            num_nodecay_params = sum(p.numel() for p in nodecay_params)
            self.param_counts = (len(decay_params), num_decay_params, len(nodecay_params), num_nodecay_params)
            # Create AdamW optimizer and use the fused version if it is available
            fused_available = "fused" in inspect.signature(torch.optim.AdamW).parameters
            use_fused = fused_available and device_type == "cuda"
            extra_args = dict(fused=True) if use_fused else dict()
            optimizer = torch.optim.AdamW(optim_groups, lr=learning_rate, betas=betas, **extra_args)
            self.fused_available = fused_available
            return optimizer

        def estimate_mfu(self, fwdbwd_per_iter, dt):
            """ estimate model flops utilization (MFU) in units of A100 bfloat16 peak FLOPS """
            N = self.get_num_params()
            cfg = self.config
            L, H, Q, T = cfg.n_layer, cfg.n_head, cfg.n_embd // cfg.n_head, cfg.block_size
            flops_per_token = 6 * N + 12 * L * H * Q * T
            flops_per_fwdbwd = flops_per_token * T
            flops_per_iter = flops_per_fwdbwd * fwdbwd_per_iter
            flops_achieved = flops_per_iter * (1.0 / dt)  # per second
            flops_promised = 312e12  # A100 GPU bfloat16 peak flops is 312 TFLOPS
            mfu = flops_achieved / flops_promised
            return mfu

        @torch.no_grad()
        def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None, sample=None):
            for _ in range(max_new_tokens):
                # if the sequence context is growing too long we must crop it at block_size
                idx_cond = idx if idx.size(1) <= self.config.block_size else idx[:, -self.config.block_size:]
                # forward the model to get the logits for the index in the sequence
                logits, _ = self(idx_cond)
                # pluck the logits at the final step and scale by desired temperature
                logits = logits[:, -1, :] / temperature
                # optionally crop the logits to only the top k options
                if top_k is not None:
                    v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                    logits[logits < v[:, [-1]]] = -float("Inf")
                # apply softmax to convert logits to (normalized) probabilities
                probs = F.softmax(logits, dim=-1)
                # sample from the distribution
                idx_next = torch.multinomial(probs, num_samples=1) if sample is None else sample(probs)
                # append sampled index to the running sequence and continue
                idx = torch.cat((idx, idx_next), dim=1)
            return idx

    return GPT


def nanogpt(lib, data, state, wrap, workdir, flash=True, dtype="float32"):
    """train.py, compressed: the config globals, get_batch from a memmapped uint16 token file, the lr schedule,
    gradient accumulation under an autocast context, GradScaler, clip_grad_norm_, checkpointing and a resume."""
    torch = lib
    GPT = nanogpt_module(lib, flash)
    record = {}
    # -----------------------------------------------------------------------------
    gradient_accumulation_steps = 2
    batch_size = 3
    block_size = 8
    n_layer, n_head, n_embd, dropout, bias = 2, 2, 16, 0.0, False
    learning_rate = 6e-3
    max_iters = 6
    weight_decay = 1e-1
    beta1, beta2 = 0.9, 0.95
    grad_clip = 1.0
    decay_lr = True
    warmup_iters = 2
    lr_decay_iters = 6
    min_lr = 6e-4
    device = "cpu"
    compile = wrap is not None
    # -----------------------------------------------------------------------------
    device_type = "cuda" if "cuda" in device else "cpu"  # for later use in torch.autocast
    ptdtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
    ctx = nullcontext() if dtype == "float32" else torch.amp.autocast(device_type=device_type, dtype=ptdtype)

    train_data = np.memmap(os.path.join(workdir, "train.bin"), dtype=np.uint16, mode="r")
    offsets = iter(data["offsets"])

    def get_batch(split):
        ix = next(offsets)  # (torch.randint(len(data) - block_size, (batch_size,)) in the original)
        x = torch.stack([torch.from_numpy((train_data[i:i + block_size]).astype(np.int64)) for i in ix])
        y = torch.stack([torch.from_numpy((train_data[i + 1:i + 1 + block_size]).astype(np.int64)) for i in ix])
        x, y = x.to(device), y.to(device)
        return x, y

    model_args = dict(n_layer=n_layer, n_head=n_head, n_embd=n_embd, block_size=block_size,
                      bias=bias, vocab_size=None, dropout=dropout)
    model_args["vocab_size"] = 40
    gptconf = GPTConfig(**model_args)
    model = GPT(gptconf)
    state = setup(lib, {"gpt": model}, state)
    record["num_params"] = np.array([model.get_num_params(), model.get_num_params(False)])
    record["keys"] = sorted(model.state_dict().keys())
    record["tied"] = model.transformer.wte.weight is model.lm_head.weight
    model.to(device)

    # initialize a GradScaler. If enabled=False scaler is a no-op
    scaler = torch.amp.GradScaler("cpu", enabled=(dtype == "float16"))
    optimizer = model.configure_optimizers(weight_decay, learning_rate, (beta1, beta2), device_type)
    record["param_counts"] = np.array(model.param_counts)
    record["fused_available"] = model.fused_available
    unoptimized_model = model
    if compile:
        model = wrap(model)  # requires PyTorch 2.0
    raw_model = model  # (model.module under DDP): a compiled model's keys carry the `_orig_mod.` prefix

    def get_lr(it):
        # 1) linear warmup for warmup_iters steps
        if it < warmup_iters:
            return learning_rate * (it + 1) / (warmup_iters + 1)
        # 2) if it > lr_decay_iters, return min learning rate
        if it > lr_decay_iters:
            return min_lr
        # 3) in between, use cosine decay down to min learning rate
        decay_ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
        assert 0 <= decay_ratio <= 1
        coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))  # coeff ranges 0..1
        return min_lr + coeff * (learning_rate - min_lr)

    def save_checkpoint(path, iter_num, best_val_loss):
        checkpoint = {
            "model": raw_model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "model_args": model_args,
            "iter_num": iter_num,
            "best_val_loss": best_val_loss,
            "config": {"learning_rate": learning_rate, "dtype": dtype},
        }
        torch.save(checkpoint, path)

    X, Y = get_batch("train")  # fetch the very first batch
    iter_num = 0
    losses, lrs, norms = [], [], []
    running_mfu = -1.0
    while True:
        # determine and set the learning rate for this iteration
        lr = get_lr(iter_num) if decay_lr else learning_rate
        for param_group in optimizer.param_groups:
            param_group["lr"] = lr
        lrs.append(lr)
        # forward backward update, with optional gradient accumulation to simulate larger batch size
        # and using the GradScaler if data type is float16
        for micro_step in range(gradient_accumulation_steps):  # noqa: B007 (as in train.py)
            with ctx:
                logits, loss = model(X, Y)
                loss = loss / gradient_accumulation_steps  # scale the loss to account for gradient accumulation
            # immediately async prefetch next batch while model is doing the forward pass on the GPU
            X, Y = get_batch("train")
            # backward pass, with gradient scaling if training in fp16
            scaler.scale(loss).backward()
        # clip the gradient
        if grad_clip != 0.0:
            scaler.unscale_(optimizer)
            norms.append(float(torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)))
        # step the optimizer and scaler if training in fp16
        scaler.step(optimizer)
        scaler.update()
        # flush the gradients as soon as we can, no need for this memory anymore
        optimizer.zero_grad(set_to_none=True)
        lossf = loss.item() * gradient_accumulation_steps
        losses.append(lossf)
        mfu = unoptimized_model.estimate_mfu(batch_size * gradient_accumulation_steps, 0.5)
        running_mfu = mfu if running_mfu == -1.0 else 0.9 * running_mfu + 0.1 * mfu
        iter_num += 1
        if iter_num == 3:
            save_checkpoint(os.path.join(workdir, f"ckpt_{lib.__name__}.pt"), iter_num, min(losses))
        # termination conditions
        if iter_num > max_iters:
            break
    record["loss"] = np.array(losses)
    record["lr"] = np.array(lrs)
    record["grad_norm"] = np.array(norms)
    record["mfu"] = np.array(running_mfu)
    record["logits"] = _np(logits.float())
    record_params(record, "gpt", unoptimized_model)

    # sample.py: deterministic decoding (top_k=1), then sampling with a multinomial stand-in fed from data
    model.eval()
    start = torch.tensor(data["prompt"], dtype=torch.long, device=device)[None, ...]
    with torch.no_grad():
        with ctx:
            greedy = unoptimized_model.generate(start, 6, temperature=0.8, top_k=1)
            uniforms = iter(data["uniforms"])

            def sample(probs):  # inverse-CDF sampling from shared uniforms: torch.multinomial's law, same draws
                u = torch.tensor(next(uniforms), dtype=probs.dtype)[:, None]
                return (torch.cumsum(probs, dim=-1) < u).sum(dim=-1, keepdim=True).clamp(max=probs.size(-1) - 1)

            sampled = unoptimized_model.generate(start, 5, temperature=1.0, top_k=10, sample=sample)
            drawn = unoptimized_model.generate(start, 3, temperature=1.0, top_k=5)
    record["greedy"] = _np(greedy)
    record["sampled"] = _np(sampled)
    record["multinomial_shape"] = np.array(drawn.shape)
    record["multinomial_dtype"] = str(drawn.dtype).split(".")[-1]
    return record, state


def nanogpt_resume(lib, path, workdir, data, flash=True):
    """train.py's init_from == 'resume': load a checkpoint (written by either library), strip `_orig_mod.`, rebuild
    the model and optimizer, then take one more training step."""
    torch = lib
    GPT = nanogpt_module(lib, flash)
    checkpoint = torch.load(path, map_location="cpu")
    checkpoint_model_args = checkpoint["model_args"]
    model_args = {}
    for k in ["n_layer", "n_head", "n_embd", "block_size", "bias", "vocab_size"]:
        model_args[k] = checkpoint_model_args[k]
    gptconf = GPTConfig(**model_args)
    model = GPT(gptconf)
    state_dict = checkpoint["model"]
    # fix the keys of the state dictionary :(
    # honestly no idea how checkpoints sometimes get this prefix, have to debug more
    unwanted_prefix = "_orig_mod."
    for k, v in list(state_dict.items()):  # noqa: B007 (as in train.py)
        if k.startswith(unwanted_prefix):
            state_dict[k[len(unwanted_prefix):]] = state_dict.pop(k)
    model.load_state_dict(state_dict)
    iter_num = checkpoint["iter_num"]
    best_val_loss = checkpoint["best_val_loss"]
    optimizer = model.configure_optimizers(1e-1, 6e-3, (0.9, 0.95), "cpu")
    optimizer.load_state_dict(checkpoint["optimizer"])
    checkpoint = None  # free up memory
    record = {"iter_num": np.array(iter_num), "best_val_loss": np.array(best_val_loss)}
    x = torch.tensor(data["resume_x"], dtype=torch.long)
    logits, loss = model(x[:, :-1].contiguous(), x[:, 1:].contiguous())
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    record["loss"] = np.array(loss.item())
    record["step"] = np.array([s["step"] for s in optimizer.state.values()], dtype=np.float64)
    record_params(record, "gpt", model)
    return record


def crop_block_size(lib, state):
    """nanoGPT's model surgery: a checkpoint's model cropped to a shorter block size (manual attention path)."""
    torch = lib
    GPT = nanogpt_module(lib, flash=False)
    model = GPT(GPTConfig(block_size=8, vocab_size=40, n_layer=2, n_head=2, n_embd=16, bias=True))
    setup(lib, {"gpt": model}, state)
    model.crop_block_size(5)
    x = torch.tensor(np.arange(10).reshape(2, 5) % 40)
    logits, loss = model(x, x)
    return {"loss": np.array(loss.item()), "wpe": np.array(model.transformer.wpe.weight.shape),
            "bias": np.array(model.transformer.h[0].attn.bias.shape), "keys": sorted(model.state_dict()),
            "is_param": isinstance(model.transformer.wpe.weight, torch.nn.Parameter)}


# ----------------------------------------------------------------------------------------------------------------
# torchvision/models/resnet.py + references/classification/train.py
# ----------------------------------------------------------------------------------------------------------------


def resnet_module(lib):
    torch = lib
    nn = torch.nn
    Tensor = torch.Tensor

    def conv3x3(in_planes, out_planes, stride=1, groups=1, dilation=1):
        """3x3 convolution with padding"""
        return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=dilation, groups=groups,
                         bias=False, dilation=dilation)

    def conv1x1(in_planes, out_planes, stride=1):
        """1x1 convolution"""
        return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)

    class BasicBlock(nn.Module):
        expansion: int = 1

        def __init__(self, inplanes, planes, stride=1, downsample=None, groups=1, base_width=64, dilation=1,
                     norm_layer=None):
            super().__init__()
            if norm_layer is None:
                norm_layer = nn.BatchNorm2d
            if groups != 1 or base_width != 64:
                raise ValueError("BasicBlock only supports groups=1 and base_width=64")
            # Both self.conv1 and self.downsample layers downsample the input when stride != 1
            self.conv1 = conv3x3(inplanes, planes, stride)
            self.bn1 = norm_layer(planes)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = conv3x3(planes, planes)
            self.bn2 = norm_layer(planes)
            self.downsample = downsample
            self.stride = stride

        def forward(self, x: Tensor) -> Tensor:
            identity = x
            out = self.conv1(x)
            out = self.bn1(out)
            out = self.relu(out)
            out = self.conv2(out)
            out = self.bn2(out)
            if self.downsample is not None:
                identity = self.downsample(x)
            out += identity
            out = self.relu(out)
            return out

    class Bottleneck(nn.Module):
        expansion: int = 4

        def __init__(self, inplanes, planes, stride=1, downsample=None, groups=1, base_width=64, dilation=1,
                     norm_layer=None):
            super().__init__()
            if norm_layer is None:
                norm_layer = nn.BatchNorm2d
            width = int(planes * (base_width / 64.0)) * groups
            # Both self.conv2 and self.downsample layers downsample the input when stride != 1
            self.conv1 = conv1x1(inplanes, width)
            self.bn1 = norm_layer(width)
            self.conv2 = conv3x3(width, width, stride, groups, dilation)
            self.bn2 = norm_layer(width)
            self.conv3 = conv1x1(width, planes * self.expansion)
            self.bn3 = norm_layer(planes * self.expansion)
            self.relu = nn.ReLU(inplace=True)
            self.downsample = downsample
            self.stride = stride

        def forward(self, x: Tensor) -> Tensor:
            identity = x
            out = self.conv1(x)
            out = self.bn1(out)
            out = self.relu(out)
            out = self.conv2(out)
            out = self.bn2(out)
            out = self.relu(out)
            out = self.conv3(out)
            out = self.bn3(out)
            if self.downsample is not None:
                identity = self.downsample(x)
            out += identity
            out = self.relu(out)
            return out

    class ResNet(nn.Module):
        def __init__(self, block, layers, num_classes=1000, zero_init_residual=False, groups=1,
                     width_per_group=64, replace_stride_with_dilation=None, norm_layer=None, base=64):
            super().__init__()
            if norm_layer is None:
                norm_layer = nn.BatchNorm2d
            self._norm_layer = norm_layer
            self.inplanes = base
            self.dilation = 1
            if replace_stride_with_dilation is None:
                replace_stride_with_dilation = [False, False, False]
            if len(replace_stride_with_dilation) != 3:
                raise ValueError("replace_stride_with_dilation should be None or a 3-element tuple, "
                                 f"got {replace_stride_with_dilation}")
            self.groups = groups
            self.base_width = width_per_group
            self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias=False)
            self.bn1 = norm_layer(self.inplanes)
            self.relu = nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
            self.layer1 = self._make_layer(block, base, layers[0])
            self.layer2 = self._make_layer(block, base * 2, layers[1], stride=2,
                                           dilate=replace_stride_with_dilation[0])
            self.layer3 = self._make_layer(block, base * 4, layers[2], stride=2,
                                           dilate=replace_stride_with_dilation[1])
            self.layer4 = self._make_layer(block, base * 8, layers[3], stride=2,
                                           dilate=replace_stride_with_dilation[2])
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(base * 8 * block.expansion, num_classes)

            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                    nn.init.constant_(m.weight, 1)
                    nn.init.constant_(m.bias, 0)

            # Zero-initialize the last BN in each residual branch,
            # so that the residual branch starts with zeros, and each residual block behaves like an identity.
            # This improves the model by 0.2~0.3% according to https://arxiv.org/abs/1706.02677
            if zero_init_residual:
                for m in self.modules():
                    if isinstance(m, Bottleneck) and m.bn3.weight is not None:
                        nn.init.constant_(m.bn3.weight, 0)  # type: ignore[arg-type]
                    elif isinstance(m, BasicBlock) and m.bn2.weight is not None:
                        nn.init.constant_(m.bn2.weight, 0)  # type: ignore[arg-type]

        def _make_layer(self, block, planes, blocks, stride=1, dilate=False):
            norm_layer = self._norm_layer
            downsample = None
            previous_dilation = self.dilation
            if dilate:
                self.dilation *= stride
                stride = 1
            if stride != 1 or self.inplanes != planes * block.expansion:
                downsample = nn.Sequential(
                    conv1x1(self.inplanes, planes * block.expansion, stride),
                    norm_layer(planes * block.expansion),
                )

            layers = []
            layers.append(block(self.inplanes, planes, stride, downsample, self.groups, self.base_width,
                                previous_dilation, norm_layer))
            self.inplanes = planes * block.expansion
            for _ in range(1, blocks):
                layers.append(block(self.inplanes, planes, groups=self.groups, base_width=self.base_width,
                                    dilation=self.dilation, norm_layer=norm_layer))

            return nn.Sequential(*layers)

        def _forward_impl(self, x: Tensor) -> Tensor:
            # See note [TorchScript super()]
            x = self.conv1(x)
            x = self.bn1(x)
            x = self.relu(x)
            x = self.maxpool(x)

            x = self.layer1(x)
            x = self.layer2(x)
            x = self.layer3(x)
            x = self.layer4(x)

            x = self.avgpool(x)
            x = torch.flatten(x, 1)
            x = self.fc(x)

            return x

        def forward(self, x: Tensor) -> Tensor:
            return self._forward_impl(x)

    return ResNet, BasicBlock, Bottleneck


def set_weight_decay(nn, model, weight_decay=1e-4, norm_weight_decay=0.0):
    """references/classification/utils.set_weight_decay: no weight decay on the norm layers' parameters."""
    norm_classes = (nn.modules.batchnorm._BatchNorm, nn.LayerNorm, nn.GroupNorm,
                    nn.modules.instancenorm._InstanceNorm, nn.LocalResponseNorm)
    params = {"other": [], "norm": []}

    def _add_params(module, prefix=""):
        for name, p in module.named_parameters(recurse=False):  # noqa: B007 (as in utils.py)
            if not p.requires_grad:
                continue
            if isinstance(module, norm_classes):
                params["norm"].append(p)
            else:
                params["other"].append(p)
        for child_name, child_module in module.named_children():
            child_prefix = f"{prefix}.{child_name}" if prefix != "" else child_name
            _add_params(child_module, prefix=child_prefix)

    _add_params(model)
    return [{"params": params["other"], "weight_decay": weight_decay},
            {"params": params["norm"], "weight_decay": norm_weight_decay}]


def resnet(lib, data, state, wrap, workdir, bottleneck=False):
    """references/classification/train.py, compressed: SGD(momentum, nesterov) with weight decay kept off the norm
    layers (set_weight_decay's norm_weight_decay=0.0), MultiStepLR, label smoothing, channels_last, grad
    clipping, evaluate() under inference_mode, a checkpoint."""
    torch = lib
    nn = torch.nn
    ResNet, BasicBlock, Bottleneck = resnet_module(lib)
    if bottleneck:
        model = ResNet(Bottleneck, [1, 1, 1, 1], num_classes=5, zero_init_residual=True, base=4)
    else:
        model = ResNet(BasicBlock, [2, 2, 2, 2], num_classes=5, zero_init_residual=True, base=4)
    state = setup(lib, {"resnet": model}, state)
    model = model.to(memory_format=torch.channels_last)
    record = {"keys": sorted(model.state_dict())}
    model_without_ddp = model
    if wrap is not None:
        model = wrap(model)

    parameters = set_weight_decay(nn, model_without_ddp)
    record["groups"] = np.array([len(g["params"]) for g in parameters])
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    optimizer = torch.optim.SGD(parameters, lr=0.1, momentum=0.9, weight_decay=1e-4, nesterov=True)
    main_lr_scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[2, 4], gamma=0.1)

    losses, lrs, accs = [], [], []
    for epoch in range(6):
        model.train()
        image, target = (torch.tensor(a) for a in data["train"][epoch])
        image = image.contiguous(memory_format=torch.channels_last)
        output = model(image)
        loss = criterion(output, target)
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        optimizer.step()
        acc1 = (output.argmax(1) == target).float().mean() * 100
        losses.append(loss.item())
        accs.append(acc1.item())
        lrs.append(optimizer.param_groups[0]["lr"])
        main_lr_scheduler.step()
    record["loss"] = np.array(losses)
    record["lr"] = np.array(lrs)
    record["acc"] = np.array(accs)

    model.eval()
    with torch.inference_mode():
        image = torch.tensor(data["test"]).to(memory_format=torch.channels_last)
        output = model(image)
        record["eval"] = _np(output)
        record["eval_inference"] = output.is_inference()
        record["eval_channels_last"] = output.is_contiguous()
        _, pred = output.topk(2, 1, True, True)
        record["top2"] = _np(pred.t())
    record["channels_last"] = model_without_ddp.conv1.weight.is_contiguous(memory_format=torch.channels_last)
    record_params(record, "resnet", model_without_ddp)
    checkpoint = {"model": model_without_ddp.state_dict(), "optimizer": optimizer.state_dict(),
                  "lr_scheduler": main_lr_scheduler.state_dict(), "epoch": 5}
    torch.save(checkpoint, os.path.join(workdir, f"resnet_{lib.__name__}.pth"))
    return record, state


def resnet_resume(lib, path, data):
    """train.py --resume: model, optimizer and scheduler state from either library's checkpoint, one more step."""
    torch = lib
    ResNet, BasicBlock, _ = resnet_module(lib)
    model = ResNet(BasicBlock, [2, 2, 2, 2], num_classes=5, zero_init_residual=True, base=4)
    checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    model.load_state_dict(checkpoint["model"])
    optimizer = torch.optim.SGD(set_weight_decay(torch.nn, model), lr=0.1, momentum=0.9, weight_decay=1e-4,
                                nesterov=True)
    optimizer.load_state_dict(checkpoint["optimizer"])
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[2, 4], gamma=0.1)
    scheduler.load_state_dict(checkpoint["lr_scheduler"])
    image, target = (torch.tensor(a) for a in data["train"][0])
    loss = torch.nn.functional.cross_entropy(model(image), target, label_smoothing=0.1)
    loss.backward()
    optimizer.step()
    scheduler.step()
    record = {"loss": np.array(loss.item()), "lr": np.array(optimizer.param_groups[0]["lr"]),
              "last_epoch": np.array(scheduler.last_epoch), "epoch": np.array(checkpoint["epoch"])}
    record_params(record, "resnet", model)
    return record


# ----------------------------------------------------------------------------------------------------------------
# timm: vision_transformer.py, layers/{patch_embed,drop,mlp,weight_init}.py, loss/cross_entropy.py, data/mixup.py,
# optim/optim_factory.py (layer-wise lr decay)
# ----------------------------------------------------------------------------------------------------------------


def vit_module(lib):
    torch = lib
    nn = torch.nn
    F = torch.nn.functional

    def _trunc_normal_(tensor, mean, std, a, b):
        # timm's own trunc_normal_ (the pre-torch-1.10 copy), written with uniform_, erfinv_, mul_, add_, clamp_
        def norm_cdf(x):
            return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

        lo = norm_cdf((a - mean) / std)
        up = norm_cdf((b - mean) / std)
        tensor.uniform_(2 * lo - 1, 2 * up - 1)
        tensor.erfinv_()
        tensor.mul_(std * math.sqrt(2.0))
        tensor.add_(mean)
        tensor.clamp_(min=a, max=b)
        return tensor

    def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0):
        with torch.no_grad():
            return _trunc_normal_(tensor, mean, std, a, b)

    def drop_path(x, drop_prob: float = 0.0, training: bool = False, scale_by_keep: bool = True):
        """Drop paths (Stochastic Depth) per sample (when applied in main path of residual blocks)."""
        if drop_prob == 0.0 or not training:
            return x
        keep_prob = 1 - drop_prob
        shape = (x.shape[0],) + (1,) * (x.ndim - 1)  # work with diff dim tensors, not just 2D ConvNets
        random_tensor = x.new_empty(shape).bernoulli_(keep_prob)
        if keep_prob > 0.0 and scale_by_keep:
            random_tensor.div_(keep_prob)
        return x * random_tensor

    class DropPath(nn.Module):
        """Drop paths (Stochastic Depth) per sample  (when applied in main path of residual blocks)."""

        def __init__(self, drop_prob: float = 0.0, scale_by_keep: bool = True):
            super().__init__()
            self.drop_prob = drop_prob
            self.scale_by_keep = scale_by_keep

        def forward(self, x):
            return drop_path(x, self.drop_prob, self.training, self.scale_by_keep)

        def extra_repr(self):
            return f"drop_prob={round(self.drop_prob, 3):0.3f}"

    class PatchEmbed(nn.Module):
        """ 2D Image to Patch Embedding """

        def __init__(self, img_size=16, patch_size=4, in_chans=3, embed_dim=16, norm_layer=None, flatten=True,
                     bias=True):
            super().__init__()
            self.img_size = (img_size, img_size)
            self.patch_size = (patch_size, patch_size)
            self.grid_size = tuple([s // p for s, p in zip(self.img_size, self.patch_size)])
            self.num_patches = self.grid_size[0] * self.grid_size[1]
            self.flatten = flatten
            self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size, bias=bias)
            self.norm = norm_layer(embed_dim) if norm_layer else nn.Identity()

        def forward(self, x):
            B, C, H, W = x.shape
            torch._assert(H == self.img_size[0], f"Input height ({H}) doesn't match model ({self.img_size[0]}).")
            x = self.proj(x)
            if self.flatten:
                x = x.flatten(2).transpose(1, 2)  # NCHW -> NLC
            x = self.norm(x)
            return x

    class Mlp(nn.Module):
        def __init__(self, in_features, hidden_features=None, out_features=None, act_layer=nn.GELU, bias=True,
                     drop=0.0):
            super().__init__()
            out_features = out_features or in_features
            hidden_features = hidden_features or in_features
            self.fc1 = nn.Linear(in_features, hidden_features, bias=bias)
            self.act = act_layer()
            self.drop1 = nn.Dropout(drop)
            self.norm = nn.Identity()
            self.fc2 = nn.Linear(hidden_features, out_features, bias=bias)
            self.drop2 = nn.Dropout(drop)

        def forward(self, x):
            x = self.fc1(x)
            x = self.act(x)
            x = self.drop1(x)
            x = self.norm(x)
            x = self.fc2(x)
            x = self.drop2(x)
            return x

    class Attention(nn.Module):
        fused_attn: bool

        def __init__(self, dim, num_heads=8, qkv_bias=False, qk_norm=False, attn_drop=0.0, proj_drop=0.0,
                     norm_layer=nn.LayerNorm, fused_attn=True):
            super().__init__()
            assert dim % num_heads == 0, "dim should be divisible by num_heads"
            self.num_heads = num_heads
            self.head_dim = dim // num_heads
            self.scale = self.head_dim ** -0.5
            self.fused_attn = fused_attn
            self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
            self.q_norm = norm_layer(self.head_dim) if qk_norm else nn.Identity()
            self.k_norm = norm_layer(self.head_dim) if qk_norm else nn.Identity()
            self.attn_drop = nn.Dropout(attn_drop)
            self.proj = nn.Linear(dim, dim)
            self.proj_drop = nn.Dropout(proj_drop)

        def forward(self, x):
            B, N, C = x.shape
            qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
            q, k, v = qkv.unbind(0)
            q, k = self.q_norm(q), self.k_norm(k)

            if self.fused_attn:
                x = F.scaled_dot_product_attention(
                    q, k, v, dropout_p=self.attn_drop.p if self.training else 0.0)
            else:
                q = q * self.scale
                attn = q @ k.transpose(-2, -1)
                attn = attn.softmax(dim=-1)
                attn = self.attn_drop(attn)
                x = attn @ v

            x = x.transpose(1, 2).reshape(B, N, C)
            x = self.proj(x)
            x = self.proj_drop(x)
            return x

    class LayerScale(nn.Module):
        def __init__(self, dim, init_values=1e-5, inplace=False):
            super().__init__()
            self.inplace = inplace
            self.gamma = nn.Parameter(init_values * torch.ones(dim))

        def forward(self, x):
            return x.mul_(self.gamma) if self.inplace else x * self.gamma

    class Block(nn.Module):
        def __init__(self, dim, num_heads, mlp_ratio=4.0, qkv_bias=False, qk_norm=False, proj_drop=0.0,
                     attn_drop=0.0, init_values=None, drop_path=0.0, act_layer=nn.GELU, norm_layer=nn.LayerNorm,
                     fused_attn=True):
            super().__init__()
            self.norm1 = norm_layer(dim)
            self.attn = Attention(dim, num_heads=num_heads, qkv_bias=qkv_bias, qk_norm=qk_norm,
                                  attn_drop=attn_drop, proj_drop=proj_drop, norm_layer=norm_layer,
                                  fused_attn=fused_attn)
            self.ls1 = LayerScale(dim, init_values=init_values) if init_values else nn.Identity()
            self.drop_path1 = DropPath(drop_path) if drop_path > 0.0 else nn.Identity()

            self.norm2 = norm_layer(dim)
            self.mlp = Mlp(in_features=dim, hidden_features=int(dim * mlp_ratio), act_layer=act_layer,
                           drop=proj_drop)
            self.ls2 = LayerScale(dim, init_values=init_values) if init_values else nn.Identity()
            self.drop_path2 = DropPath(drop_path) if drop_path > 0.0 else nn.Identity()

        def forward(self, x):
            x = x + self.drop_path1(self.ls1(self.attn(self.norm1(x))))
            x = x + self.drop_path2(self.ls2(self.mlp(self.norm2(x))))
            return x

    class VisionTransformer(nn.Module):
        def __init__(self, img_size=16, patch_size=4, in_chans=3, num_classes=5, global_pool="token",
                     embed_dim=16, depth=3, num_heads=2, mlp_ratio=2.0, qkv_bias=True, qk_norm=False,
                     init_values=0.1, class_token=True, drop_rate=0.0, attn_drop_rate=0.0, drop_path_rate=0.0,
                     fused_attn=True):
            super().__init__()
            norm_layer = partial(nn.LayerNorm, eps=1e-6)
            act_layer = nn.GELU
            self.num_classes = num_classes
            self.global_pool = global_pool
            self.num_features = self.embed_dim = embed_dim
            self.num_prefix_tokens = 1 if class_token else 0

            self.patch_embed = PatchEmbed(img_size=img_size, patch_size=patch_size, in_chans=in_chans,
                                          embed_dim=embed_dim)
            num_patches = self.patch_embed.num_patches

            self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim)) if class_token else None
            embed_len = num_patches + self.num_prefix_tokens
            self.pos_embed = nn.Parameter(torch.randn(1, embed_len, embed_dim) * .02)
            self.pos_drop = nn.Dropout(p=drop_rate)
            self.norm_pre = nn.Identity()

            dpr = [x.item() for x in torch.linspace(0, drop_path_rate, depth)]  # stochastic depth decay rule
            self.blocks = nn.Sequential(*[
                Block(dim=embed_dim, num_heads=num_heads, mlp_ratio=mlp_ratio, qkv_bias=qkv_bias,
                      qk_norm=qk_norm, init_values=init_values, proj_drop=drop_rate, attn_drop=attn_drop_rate,
                      drop_path=dpr[i], norm_layer=norm_layer, act_layer=act_layer, fused_attn=fused_attn)
                for i in range(depth)])
            self.norm = norm_layer(embed_dim)
            self.fc_norm = nn.Identity()
            self.head_drop = nn.Dropout(drop_rate)
            self.head = nn.Linear(self.embed_dim, num_classes) if num_classes > 0 else nn.Identity()
            self.init_weights()

        def init_weights(self):
            trunc_normal_(self.pos_embed, std=.02)
            if self.cls_token is not None:
                nn.init.normal_(self.cls_token, std=1e-6)
            self.apply(_init_weights)

        @torch.jit.ignore
        def no_weight_decay(self):
            return {"pos_embed", "cls_token", "dist_token"}

        @torch.jit.ignore
        def group_matcher(self, coarse=False):
            return dict(stem=r"^cls_token|pos_embed|patch_embed", blocks=[(r"^blocks\.(\d+)", None),
                                                                          (r"^norm", (99999,))])

        def _pos_embed(self, x):
            x = x + self.pos_embed if self.cls_token is None else x
            if self.cls_token is not None:
                x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1)
                x = x + self.pos_embed
            return self.pos_drop(x)

        def forward_features(self, x):
            x = self.patch_embed(x)
            x = self._pos_embed(x)
            x = self.norm_pre(x)
            x = self.blocks(x)
            x = self.norm(x)
            return x

        def forward_head(self, x, pre_logits: bool = False):
            if self.global_pool:
                x = x[:, self.num_prefix_tokens:].mean(dim=1) if self.global_pool == "avg" else x[:, 0]
            x = self.fc_norm(x)
            x = self.head_drop(x)
            return x if pre_logits else self.head(x)

        def forward(self, x):
            x = self.forward_features(x)
            x = self.forward_head(x)
            return x

    def _init_weights(m):
        """ ViT weight initialization, original timm impl (for reproducibility) """
        if isinstance(m, nn.Linear):
            trunc_normal_(m.weight, std=.02)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.constant_(m.bias, 0)
        elif isinstance(m, nn.LayerNorm):
            nn.init.constant_(m.bias, 0)
            nn.init.constant_(m.weight, 1.0)

    return VisionTransformer, drop_path


def param_groups_layer_decay(model, weight_decay=0.05, no_weight_decay_list=(), layer_decay=0.75):
    """timm.optim._param_groups.param_groups_layer_decay, with group_matcher's block ids read by regex."""
    import re

    param_group_names = {}
    param_groups = {}
    num_layers = len(model.blocks) + 1
    layer_scales = list(layer_decay ** (num_layers - i) for i in range(num_layers + 1))

    def layer_id(name):
        if re.match(r"^cls_token|pos_embed|patch_embed", name):
            return 0
        m = re.match(r"^blocks\.(\d+)", name)
        return int(m.group(1)) + 1 if m else num_layers

    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        # no decay: all 1D parameters and model specific ones
        if param.ndim == 1 or name in no_weight_decay_list:
            g_decay = "no_decay"
            this_decay = 0.0
        else:
            g_decay = "decay"
            this_decay = weight_decay
        lid = layer_id(name)
        group_name = "layer_%d_%s" % (lid, g_decay)  # noqa: UP031 (as in timm)
        if group_name not in param_groups:
            this_scale = layer_scales[lid]
            param_group_names[group_name] = {"lr_scale": this_scale, "weight_decay": this_decay, "param_names": []}
            param_groups[group_name] = {"lr_scale": this_scale, "weight_decay": this_decay, "params": []}
        param_group_names[group_name]["param_names"].append(name)
        param_groups[group_name]["params"].append(param)
    return list(param_groups.values()), param_group_names


def vit(lib, data, state, wrap, workdir, fused_attn=True):
    """timm train.py, compressed: Mixup with SoftTargetCrossEntropy, AdamW over layer-decayed groups (lr_scale
    applied per step by the scheduler), clip_grad_norm_, eval of the head."""
    torch = lib
    F = torch.nn.functional
    VisionTransformer, drop_path = vit_module(lib)
    model = VisionTransformer(fused_attn=fused_attn)
    state = setup(lib, {"vit": model}, state)
    record = {"keys": sorted(model.state_dict())}
    groups, names = param_groups_layer_decay(model, no_weight_decay_list=model.no_weight_decay())
    record["groups"] = sorted((k, len(v["param_names"])) for k, v in names.items())
    optimizer = torch.optim.AdamW(groups, lr=2e-3, betas=(0.9, 0.999), eps=1e-8)
    train_model = wrap(model) if wrap is not None else model

    class SoftTargetCrossEntropy(torch.nn.Module):
        def forward(self, x, target):
            loss = torch.sum(-target * F.log_softmax(x, dim=-1), dim=-1)
            return loss.mean()

    def one_hot(x, num_classes, on_value=1.0, off_value=0.0):
        x = x.long().view(-1, 1)
        return torch.full((x.size()[0], num_classes), off_value, device=x.device).scatter_(1, x, on_value)

    def mixup_target(target, num_classes, lam=1.0, smoothing=0.0):
        off_value = smoothing / num_classes
        on_value = 1.0 - smoothing + off_value
        y1 = one_hot(target, num_classes, on_value=on_value, off_value=off_value)
        y2 = one_hot(target.flip(0), num_classes, on_value=on_value, off_value=off_value)
        return y1 * lam + y2 * (1.0 - lam)

    criterion = SoftTargetCrossEntropy()
    losses, norms = [], []
    lr = 2e-3
    for step, (x, target) in enumerate(data["train"]):
        x, target = torch.tensor(x), torch.tensor(target)
        # Mixup._mix_batch: lam from np.random.beta, mixed with the flipped batch in place
        lam = float(data["lam"][step])
        x_flipped = x.flip(0).mul_(1.0 - lam)
        x.mul_(lam).add_(x_flipped)
        target = mixup_target(target, 5, lam, smoothing=0.1)
        # the scheduler's step: lr * lr_scale per group (cosine)
        for param_group in optimizer.param_groups:
            param_group["lr"] = lr * 0.5 * (1 + math.cos(math.pi * step / 6)) * param_group.get("lr_scale", 1.0)
        output = train_model(x)
        loss = criterion(output, target)
        optimizer.zero_grad()
        loss.backward()
        norms.append(torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0).item())
        optimizer.step()
        losses.append(loss.item())
    record["loss"] = np.array(losses)
    record["grad_norm"] = np.array(norms)
    record["lrs"] = np.array([g["lr"] for g in optimizer.param_groups])
    model.eval()
    with torch.no_grad():
        out = model(torch.tensor(data["test"]))
        record["eval"] = _np(out)
        record["eval_softmax"] = _np(out.softmax(-1))
    record_params(record, "vit", model)
    # timm's Mixup draws lam from np.random.beta; a Beta distribution object gives the same law
    beta = torch.distributions.Beta(torch.tensor([0.8]), torch.tensor([0.8]))
    record["beta_log_prob"] = _np(beta.log_prob(torch.tensor([0.1, 0.5, 0.9])))
    record["beta_mean"] = _np(beta.mean)
    record["beta_entropy"] = _np(beta.entropy())
    sample = beta.sample((2000,))
    record["beta_sample_shape"] = np.array(sample.shape)
    record["beta_sample_in_range"] = bool(((sample > 0) & (sample < 1)).all())
    # DropPath in training: per-sample masks of 0 or 1 / keep_prob
    torch.manual_seed(0)
    y = drop_path(torch.ones(64, 3, 4), 0.25, training=True)
    record["drop_path_values"] = np.unique(_np(y))
    record["drop_path_per_sample"] = bool((y == y[:, :1, :1]).all())
    record["drop_path_eval"] = _np(drop_path(torch.ones(2, 3), 0.25, training=False))
    return record, state


# ----------------------------------------------------------------------------------------------------------------
# diffusers: models/embeddings.py (get_timestep_embedding), a UNet2DModel-lite (ResnetBlock2D, Downsample2D,
# Upsample2D, an attention block), schedulers/scheduling_ddpm.py, training/ema (EMAModel), train_unconditional.py
# ----------------------------------------------------------------------------------------------------------------


def ddpm_module(lib):
    torch = lib
    nn = torch.nn
    F = torch.nn.functional

    def get_timestep_embedding(timesteps, embedding_dim, flip_sin_to_cos=False, downscale_freq_shift=1,
                               scale=1, max_period=10000):
        assert len(timesteps.shape) == 1, "Timesteps should be a 1d-array"
        half_dim = embedding_dim // 2
        exponent = -math.log(max_period) * torch.arange(start=0, end=half_dim, dtype=torch.float32,
                                                        device=timesteps.device)
        exponent = exponent / (half_dim - downscale_freq_shift)
        emb = torch.exp(exponent)
        emb = timesteps[:, None].float() * emb[None, :]
        # scale embeddings
        emb = scale * emb
        # concat sine and cosine embeddings
        emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=-1)
        # flip sine and cosine embeddings
        if flip_sin_to_cos:
            emb = torch.cat([emb[:, half_dim:], emb[:, :half_dim]], dim=-1)
        # zero pad
        if embedding_dim % 2 == 1:
            emb = torch.nn.functional.pad(emb, (0, 1, 0, 0))
        return emb

    class ResnetBlock2D(nn.Module):
        def __init__(self, in_channels, out_channels, temb_channels, groups=4, eps=1e-6, output_scale_factor=1.0):
            super().__init__()
            self.norm1 = nn.GroupNorm(num_groups=groups, num_channels=in_channels, eps=eps, affine=True)
            self.conv1 = nn.Conv2d(in_channels, out_channels, kernel_size=3, stride=1, padding=1)
            self.time_emb_proj = nn.Linear(temb_channels, out_channels)
            self.norm2 = nn.GroupNorm(num_groups=groups, num_channels=out_channels, eps=eps, affine=True)
            self.dropout = nn.Dropout(0.0)
            self.conv2 = nn.Conv2d(out_channels, out_channels, kernel_size=3, stride=1, padding=1)
            self.nonlinearity = nn.SiLU()
            self.output_scale_factor = output_scale_factor
            self.conv_shortcut = None
            if in_channels != out_channels:
                self.conv_shortcut = nn.Conv2d(in_channels, out_channels, kernel_size=1, stride=1, padding=0)

        def forward(self, input_tensor, temb):
            hidden_states = input_tensor
            hidden_states = self.norm1(hidden_states)
            hidden_states = self.nonlinearity(hidden_states)
            hidden_states = self.conv1(hidden_states)
            temb = self.nonlinearity(temb)
            temb = self.time_emb_proj(temb)[:, :, None, None]
            hidden_states = hidden_states + temb
            hidden_states = self.norm2(hidden_states)
            hidden_states = self.nonlinearity(hidden_states)
            hidden_states = self.dropout(hidden_states)
            hidden_states = self.conv2(hidden_states)
            if self.conv_shortcut is not None:
                input_tensor = self.conv_shortcut(input_tensor.contiguous())
            output_tensor = (input_tensor + hidden_states) / self.output_scale_factor
            return output_tensor

    class Downsample2D(nn.Module):
        def __init__(self, channels):
            super().__init__()
            self.conv = nn.Conv2d(channels, channels, kernel_size=3, stride=2, padding=1)

        def forward(self, hidden_states):
            return self.conv(hidden_states)

    class Upsample2D(nn.Module):
        def __init__(self, channels):
            super().__init__()
            self.conv = nn.Conv2d(channels, channels, kernel_size=3, padding=1)

        def forward(self, hidden_states):
            dtype = hidden_states.dtype
            if dtype == torch.bfloat16:
                hidden_states = hidden_states.to(torch.float32)
            # upsample_nearest_nhwc fails with large batch sizes. see https://github.com/huggingface/diffusers/issues/984
            if hidden_states.shape[0] >= 64:
                hidden_states = hidden_states.contiguous()
            hidden_states = F.interpolate(hidden_states, scale_factor=2.0, mode="nearest")
            if dtype == torch.bfloat16:
                hidden_states = hidden_states.to(dtype)
            return self.conv(hidden_states)

    class AttentionBlock(nn.Module):
        """The legacy diffusers attention over H*W positions: baddbmm for the scores (AttnProcessor), or SDPA."""

        def __init__(self, channels, heads=1, groups=4, use_sdpa=False):
            super().__init__()
            self.heads = heads
            self.scale = (channels // heads) ** -0.5
            self.group_norm = nn.GroupNorm(num_channels=channels, num_groups=groups, eps=1e-6, affine=True)
            self.to_q = nn.Linear(channels, channels)
            self.to_k = nn.Linear(channels, channels)
            self.to_v = nn.Linear(channels, channels)
            self.to_out = nn.ModuleList([nn.Linear(channels, channels), nn.Dropout(0.0)])
            self.use_sdpa = use_sdpa

        def head_to_batch_dim(self, tensor):
            batch_size, seq_len, dim = tensor.shape
            tensor = tensor.reshape(batch_size, seq_len, self.heads, dim // self.heads)
            return tensor.permute(0, 2, 1, 3).reshape(batch_size * self.heads, seq_len, dim // self.heads)

        def batch_to_head_dim(self, tensor):
            batch_size, seq_len, dim = tensor.shape
            tensor = tensor.reshape(batch_size // self.heads, self.heads, seq_len, dim)
            return tensor.permute(0, 2, 1, 3).reshape(batch_size // self.heads, seq_len, dim * self.heads)

        def get_attention_scores(self, query, key):
            baddbmm_input = torch.empty(query.shape[0], query.shape[1], key.shape[1], dtype=query.dtype,
                                        device=query.device)
            attention_scores = torch.baddbmm(baddbmm_input, query, key.transpose(-1, -2), beta=0,
                                             alpha=self.scale)
            attention_probs = attention_scores.softmax(dim=-1)
            return attention_probs.to(query.dtype)

        def forward(self, hidden_states):
            residual = hidden_states
            batch_size, channel, height, width = hidden_states.shape
            hidden_states = self.group_norm(hidden_states)
            hidden_states = hidden_states.view(batch_size, channel, height * width).transpose(1, 2)
            query = self.to_q(hidden_states)
            key = self.to_k(hidden_states)
            value = self.to_v(hidden_states)
            if self.use_sdpa:  # AttnProcessor2_0
                head_dim = channel // self.heads
                query = query.view(batch_size, -1, self.heads, head_dim).transpose(1, 2)
                key = key.view(batch_size, -1, self.heads, head_dim).transpose(1, 2)
                value = value.view(batch_size, -1, self.heads, head_dim).transpose(1, 2)
                hidden_states = F.scaled_dot_product_attention(query, key, value, dropout_p=0.0, is_causal=False)
                hidden_states = hidden_states.transpose(1, 2).reshape(batch_size, -1, self.heads * head_dim)
            else:
                query = self.head_to_batch_dim(query)
                key = self.head_to_batch_dim(key)
                value = self.head_to_batch_dim(value)
                attention_probs = self.get_attention_scores(query, key)
                hidden_states = torch.bmm(attention_probs, value)
                hidden_states = self.batch_to_head_dim(hidden_states)
            hidden_states = self.to_out[0](hidden_states)
            hidden_states = self.to_out[1](hidden_states)
            hidden_states = hidden_states.transpose(-1, -2).reshape(batch_size, channel, height, width)
            return (hidden_states + residual) / 1.0

    class UNetLite(nn.Module):
        def __init__(self, in_channels=3, block_out_channels=(8, 16), temb=16, use_sdpa=False):
            super().__init__()
            c0, c1 = block_out_channels
            self.temb_ch = c0
            self.time_embedding = nn.Sequential(nn.Linear(c0, temb), nn.SiLU(), nn.Linear(temb, temb))
            self.conv_in = nn.Conv2d(in_channels, c0, kernel_size=3, padding=1)
            self.down0 = ResnetBlock2D(c0, c0, temb)
            self.downsample = Downsample2D(c0)
            self.down1 = ResnetBlock2D(c0, c1, temb)
            self.mid = ResnetBlock2D(c1, c1, temb)
            self.mid_attn = AttentionBlock(c1, heads=2, use_sdpa=use_sdpa)
            self.up1 = ResnetBlock2D(c1 + c1, c1, temb)
            self.upsample = Upsample2D(c1)
            self.up0 = ResnetBlock2D(c1 + c0, c0, temb)
            self.conv_norm_out = nn.GroupNorm(num_channels=c0, num_groups=4, eps=1e-6)
            self.conv_act = nn.SiLU()
            self.conv_out = nn.Conv2d(c0, in_channels, kernel_size=3, padding=1)

        def forward(self, sample, timestep):
            timesteps = timestep
            if not torch.is_tensor(timesteps):
                timesteps = torch.tensor([timesteps], dtype=torch.long, device=sample.device)
            elif torch.is_tensor(timesteps) and len(timesteps.shape) == 0:
                timesteps = timesteps[None].to(sample.device)
            # broadcast to batch dimension in a way that's compatible with ONNX/Core ML
            timesteps = timesteps * torch.ones(sample.shape[0], dtype=timesteps.dtype, device=timesteps.device)
            t_emb = get_timestep_embedding(timesteps, self.temb_ch, flip_sin_to_cos=True, downscale_freq_shift=0)
            t_emb = t_emb.to(dtype=sample.dtype)
            emb = self.time_embedding(t_emb)

            sample = self.conv_in(sample)
            h0 = self.down0(sample, emb)
            h1 = self.down1(self.downsample(h0), emb)
            mid = self.mid_attn(self.mid(h1, emb))
            up = self.up1(torch.cat([mid, h1], dim=1), emb)
            up = self.up0(torch.cat([self.upsample(up), h0], dim=1), emb)
            sample = self.conv_out(self.conv_act(self.conv_norm_out(up)))
            return sample

    return UNetLite


def betas_for_alpha_bar(torch, num_diffusion_timesteps, max_beta=0.999):
    def alpha_bar_fn(t):
        return math.cos((t + 0.008) / 1.008 * math.pi / 2) ** 2

    betas = []
    for i in range(num_diffusion_timesteps):
        t1 = i / num_diffusion_timesteps
        t2 = (i + 1) / num_diffusion_timesteps
        betas.append(min(1 - alpha_bar_fn(t2) / alpha_bar_fn(t1), max_beta))
    return torch.tensor(betas, dtype=torch.float32)


class DDPMScheduler:
    """diffusers.DDPMScheduler's add_noise and step (epsilon prediction, fixed_small variance, clipped x0)."""

    def __init__(self, torch, num_train_timesteps=50, beta_start=0.0001, beta_end=0.02, beta_schedule="linear"):
        self.torch = torch
        if beta_schedule == "linear":
            self.betas = torch.linspace(beta_start, beta_end, num_train_timesteps, dtype=torch.float32)
        elif beta_schedule == "scaled_linear":
            self.betas = torch.linspace(beta_start ** 0.5, beta_end ** 0.5, num_train_timesteps,
                                        dtype=torch.float32) ** 2
        else:
            self.betas = betas_for_alpha_bar(torch, num_train_timesteps)
        self.alphas = 1.0 - self.betas
        self.alphas_cumprod = torch.cumprod(self.alphas, dim=0)
        self.one = torch.tensor(1.0)
        self.num_train_timesteps = num_train_timesteps
        self.timesteps = torch.from_numpy(np.arange(0, num_train_timesteps)[::-1].copy())

    def set_timesteps(self, num_inference_steps):
        step_ratio = self.num_train_timesteps // num_inference_steps
        timesteps = (np.arange(0, num_inference_steps) * step_ratio).round()[::-1].copy().astype(np.int64)
        self.timesteps = self.torch.from_numpy(timesteps)
        self.num_inference_steps = num_inference_steps

    def add_noise(self, original_samples, noise, timesteps):
        alphas_cumprod = self.alphas_cumprod.to(device=original_samples.device, dtype=original_samples.dtype)
        timesteps = timesteps.to(original_samples.device)
        sqrt_alpha_prod = alphas_cumprod[timesteps] ** 0.5
        sqrt_alpha_prod = sqrt_alpha_prod.flatten()
        while len(sqrt_alpha_prod.shape) < len(original_samples.shape):
            sqrt_alpha_prod = sqrt_alpha_prod.unsqueeze(-1)
        sqrt_one_minus_alpha_prod = (1 - alphas_cumprod[timesteps]) ** 0.5
        sqrt_one_minus_alpha_prod = sqrt_one_minus_alpha_prod.flatten()
        while len(sqrt_one_minus_alpha_prod.shape) < len(original_samples.shape):
            sqrt_one_minus_alpha_prod = sqrt_one_minus_alpha_prod.unsqueeze(-1)
        noisy_samples = sqrt_alpha_prod * original_samples + sqrt_one_minus_alpha_prod * noise
        return noisy_samples

    def previous_timestep(self, timestep):
        prev_t = timestep - self.num_train_timesteps // self.num_inference_steps
        return prev_t

    def step(self, model_output, timestep, sample, variance_noise):
        torch = self.torch
        t = timestep
        prev_t = self.previous_timestep(t)
        # 1. compute alphas, betas
        alpha_prod_t = self.alphas_cumprod[t]
        alpha_prod_t_prev = self.alphas_cumprod[prev_t] if prev_t >= 0 else self.one
        beta_prod_t = 1 - alpha_prod_t
        beta_prod_t_prev = 1 - alpha_prod_t_prev
        current_alpha_t = alpha_prod_t / alpha_prod_t_prev
        current_beta_t = 1 - current_alpha_t
        # 2. compute predicted original sample from predicted noise also called "predicted x_0"
        pred_original_sample = (sample - beta_prod_t ** (0.5) * model_output) / alpha_prod_t ** (0.5)
        # 3. Clip or threshold "predicted x_0"
        pred_original_sample = pred_original_sample.clamp(-1.0, 1.0)
        # 4. Compute coefficients for pred_original_sample x_0 and current sample x_t
        pred_original_sample_coeff = (alpha_prod_t_prev ** (0.5) * current_beta_t) / beta_prod_t
        current_sample_coeff = current_alpha_t ** (0.5) * beta_prod_t_prev / beta_prod_t
        # 5. Compute predicted previous sample µ_t
        pred_prev_sample = pred_original_sample_coeff * pred_original_sample + current_sample_coeff * sample
        # 6. Add noise
        variance = 0
        if t > 0:
            variance = (1 - alpha_prod_t_prev) / (1 - alpha_prod_t) * current_beta_t
            variance = torch.clamp(variance, min=1e-20)
            variance = (variance ** 0.5) * variance_noise
        pred_prev_sample = pred_prev_sample + variance
        return pred_prev_sample, pred_original_sample


class EMAModel:
    """diffusers.training_utils.EMAModel: decay warmup, foreach lerp or the mul_/add_ loop."""

    def __init__(self, torch, parameters, decay=0.9999, min_decay=0.0, update_after_step=0, use_ema_warmup=False,
                 inv_gamma=1.0, power=2 / 3, foreach=False):
        self.torch = torch
        parameters = list(parameters)
        self.shadow_params = [p.clone().detach() for p in parameters]
        self.decay = decay
        self.min_decay = min_decay
        self.update_after_step = update_after_step
        self.use_ema_warmup = use_ema_warmup
        self.inv_gamma = inv_gamma
        self.power = power
        self.optimization_step = 0
        self.foreach = foreach

    def get_decay(self, optimization_step):
        step = max(0, optimization_step - self.update_after_step - 1)
        if step <= 0:
            return 0.0
        if self.use_ema_warmup:
            cur_decay_value = 1 - (1 + step / self.inv_gamma) ** -self.power
        else:
            cur_decay_value = (1 + step) / (10 + step)
        cur_decay_value = min(cur_decay_value, self.decay)
        # make sure decay is not smaller than min_decay
        cur_decay_value = max(cur_decay_value, self.min_decay)
        return cur_decay_value

    def step(self, parameters):
        torch = self.torch
        parameters = list(parameters)
        self.optimization_step += 1
        # Compute the decay factor for the exponential moving average.
        decay = self.get_decay(self.optimization_step)
        self.cur_decay_value = decay
        one_minus_decay = 1 - decay
        with torch.no_grad():
            if self.foreach:
                params_grad = [param for param in parameters if param.requires_grad]
                s_params_grad = [s_param for s_param, param in zip(self.shadow_params, parameters)
                                 if param.requires_grad]
                if len(params_grad) < len(parameters):
                    torch._foreach_copy_(
                        [s_param for s_param, param in zip(self.shadow_params, parameters)
                         if not param.requires_grad],
                        [param for param in parameters if not param.requires_grad], non_blocking=True)
                torch._foreach_sub_(s_params_grad, torch._foreach_sub(s_params_grad, params_grad),
                                    alpha=one_minus_decay)
            else:
                for s_param, param in zip(self.shadow_params, parameters):
                    if param.requires_grad:
                        s_param.sub_(one_minus_decay * (s_param - param))
                    else:
                        s_param.copy_(param)

    def copy_to(self, parameters):
        for s_param, param in zip(self.shadow_params, list(parameters)):
            param.data.copy_(s_param.to(param.device).data)

    def state_dict(self):
        return {"decay": self.decay, "min_decay": self.min_decay, "optimization_step": self.optimization_step,
                "update_after_step": self.update_after_step, "use_ema_warmup": self.use_ema_warmup,
                "inv_gamma": self.inv_gamma, "power": self.power, "shadow_params": self.shadow_params}


def ddpm(lib, data, state, wrap, workdir, use_sdpa=False, beta_schedule="linear", foreach=False):
    """examples/unconditional_image_generation/train_unconditional.py, compressed: noise, timesteps, add_noise,
    MSE on the noise, AdamW + clip_grad_norm_, EMA, then a few DDPM sampling steps with the EMA weights."""
    torch = lib
    F = torch.nn.functional
    UNetLite = ddpm_module(lib)
    model = UNetLite(use_sdpa=use_sdpa)
    state = setup(lib, {"unet": model}, state)
    record = {"keys": sorted(model.state_dict())}
    noise_scheduler = DDPMScheduler(torch, num_train_timesteps=50, beta_schedule=beta_schedule)
    record["alphas_cumprod"] = _np(noise_scheduler.alphas_cumprod)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.95, 0.999), weight_decay=1e-6, eps=1e-8)
    ema_model = EMAModel(torch, model.parameters(), decay=0.9999, use_ema_warmup=True, inv_gamma=1.0, power=0.75,
                         foreach=foreach)
    train_model = wrap(model) if wrap is not None else model
    losses, decays = [], []
    for step, batch in enumerate(data["images"]):
        clean_images = torch.tensor(batch)
        # Sample noise that we'll add to the images
        noise = torch.tensor(data["noise"][step])
        bsz = clean_images.shape[0]
        # Sample a random timestep for each image
        timesteps = torch.tensor(data["timesteps"][step], dtype=torch.long)
        # Add noise to the clean images according to the noise magnitude at each timestep
        noisy_images = noise_scheduler.add_noise(clean_images, noise, timesteps)
        if step == 0:
            record["noisy"] = _np(noisy_images)
        model_output = train_model(noisy_images, timesteps)
        loss = F.mse_loss(model_output.float(), noise.float())  # this could have different weights!
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad()
        ema_model.step(model.parameters())
        decays.append(ema_model.cur_decay_value)
        losses.append(loss.detach().item())
        assert bsz == clean_images.shape[0]
    record["loss"] = np.array(losses)
    record["decay"] = np.array(decays)
    record_params(record, "unet", model)
    for (name, _), p in zip(model.named_parameters(), ema_model.shadow_params):
        record[f"ema:{name}"] = _np(p)
    # DDPMPipeline.__call__ with the EMA weights
    ema_model.copy_to(model.parameters())
    model.eval()
    noise_scheduler.set_timesteps(5)
    image = torch.tensor(data["sample_noise"][0])
    with torch.no_grad():
        for i, t in enumerate(noise_scheduler.timesteps):
            model_output = model(image, t)
            image, x0 = noise_scheduler.step(model_output, t, image, torch.tensor(data["sample_noise"][i + 1]))
    image = (image / 2 + 0.5).clamp(0, 1)
    record["sample"] = _np(image.cpu().permute(0, 2, 3, 1))
    torch.save(ema_model.state_dict(), os.path.join(workdir, f"ema_{lib.__name__}.pt"))
    return record, state
