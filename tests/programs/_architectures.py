"""Small but architecturally faithful modern models, written once against a library namespace `lib` (ember or
torch), and the harness that trains them a few AdamW steps and records outputs, loss, gradients and parameters.

Used by test_architectures_r13.py: (a) ember eager against torch (torch's initial weights copied into ember),
(b) ember.compile(model) against ember eager.
"""

from __future__ import annotations

import math

import numpy as np


def _np(t):
    return t.detach().cpu().numpy() if hasattr(t, "detach") else np.asarray(t)


# ----------------------------------------------------------------------------------------------------------
# 1. LLaMA-style decoder
# ----------------------------------------------------------------------------------------------------------


def llama(lib, vocab=32, dim=32, n_layers=2, n_heads=4, n_kv_heads=2, hidden=48, max_seq=16,
          rope="cos_sin", gqa="sdpa"):
    nn, F = lib.nn, lib.nn.functional

    class RMSNorm(nn.Module):
        def __init__(self, d, eps=1e-6):
            super().__init__()
            self.eps = eps
            self.weight = nn.Parameter(lib.ones(d))

        def forward(self, x):
            return x * lib.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight

    def rotate_half(x):
        x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
        return lib.cat((-x2, x1), dim=-1)

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.hd = dim // n_heads
            self.wq = nn.Linear(dim, n_heads * self.hd, bias=False)
            self.wk = nn.Linear(dim, n_kv_heads * self.hd, bias=False)
            self.wv = nn.Linear(dim, n_kv_heads * self.hd, bias=False)
            self.wo = nn.Linear(n_heads * self.hd, dim, bias=False)

        def forward(self, x, rot):
            B, T, _ = x.shape
            q = self.wq(x).view(B, T, n_heads, self.hd)
            k = self.wk(x).view(B, T, n_kv_heads, self.hd)
            v = self.wv(x).view(B, T, n_kv_heads, self.hd)
            if rope == "cos_sin":
                cos, sin = rot
                cos, sin = cos[None, :, None, :], sin[None, :, None, :]
                q = q * cos + rotate_half(q) * sin
                k = k * cos + rotate_half(k) * sin
            else:  # Meta's view_as_complex version
                freqs_cis = rot[None, :, None, :]
                up = lib.promote_types(x.dtype, lib.float32)  # Meta's .float(), float64 kept float64
                q_ = lib.view_as_complex(q.to(up).reshape(*q.shape[:-1], -1, 2))
                k_ = lib.view_as_complex(k.to(up).reshape(*k.shape[:-1], -1, 2))
                q = lib.view_as_real(q_ * freqs_cis).flatten(3).type_as(x)
                k = lib.view_as_real(k_ * freqs_cis).flatten(3).type_as(x)
            q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
            if gqa == "sdpa":
                out = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
            else:
                rep = n_heads // n_kv_heads
                k = k.repeat_interleave(rep, dim=1)
                v = v.repeat_interleave(rep, dim=1)
                mask = lib.full((T, T), float("-inf"), dtype=x.dtype).triu(1)
                scores = q @ k.transpose(-2, -1) / math.sqrt(self.hd) + mask
                up = lib.promote_types(x.dtype, lib.float32)
                out = F.softmax(scores.to(up), dim=-1).type_as(q) @ v
            return self.wo(out.transpose(1, 2).contiguous().view(B, T, -1))

    class FeedForward(nn.Module):
        def __init__(self):
            super().__init__()
            self.w1 = nn.Linear(dim, hidden, bias=False)
            self.w2 = nn.Linear(hidden, dim, bias=False)
            self.w3 = nn.Linear(dim, hidden, bias=False)

        def forward(self, x):
            return self.w2(F.silu(self.w1(x)) * self.w3(x))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.attention_norm = RMSNorm(dim)
            self.attention = Attention()
            self.ffn_norm = RMSNorm(dim)
            self.feed_forward = FeedForward()

        def forward(self, x, rot):
            h = x + self.attention(self.attention_norm(x), rot)
            return h + self.feed_forward(self.ffn_norm(h))

    class Llama(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok_embeddings = nn.Embedding(vocab, dim)
            self.layers = nn.ModuleList(Block() for _ in range(n_layers))
            self.norm = RMSNorm(dim)
            self.output = nn.Linear(dim, vocab, bias=False)
            self.output.weight = self.tok_embeddings.weight  # tied
            hd = dim // n_heads
            inv_freq = 1.0 / (10000.0 ** (lib.arange(0, hd, 2).float() / hd))
            self.register_buffer("inv_freq", inv_freq, persistent=False)

        def rotary(self, T):
            t = lib.arange(T, dtype=self.inv_freq.dtype)
            freqs = lib.outer(t, self.inv_freq)
            if rope == "cos_sin":
                emb = lib.cat((freqs, freqs), dim=-1)
                return emb.cos(), emb.sin()
            return lib.polar(lib.ones_like(freqs), freqs)

        def forward(self, tokens, targets):
            h = self.tok_embeddings(tokens)
            rot = self.rotary(tokens.shape[1])
            for layer in self.layers:
                h = layer(h, rot)
            logits = self.output(self.norm(h))
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
            return logits, loss

    return Llama()


# ----------------------------------------------------------------------------------------------------------
# 2. T5-style encoder-decoder block
# ----------------------------------------------------------------------------------------------------------


def t5(lib, vocab=40, d_model=32, n_heads=4, d_kv=8, d_ff=48, num_buckets=8, max_distance=20, gated=True):
    nn, F = lib.nn, lib.nn.functional
    inner = n_heads * d_kv

    class T5LayerNorm(nn.Module):
        def __init__(self, d, eps=1e-6):
            super().__init__()
            self.weight = nn.Parameter(lib.ones(d))
            self.variance_epsilon = eps

        def forward(self, hidden_states):
            up = lib.promote_types(hidden_states.dtype, lib.float32)  # HF's .to(float32), float64 kept
            variance = hidden_states.to(up).pow(2).mean(-1, keepdim=True)
            hidden_states = hidden_states * lib.rsqrt(variance + self.variance_epsilon)
            return self.weight * hidden_states.to(self.weight.dtype)

    def relative_position_bucket(relative_position, bidirectional):
        relative_buckets = 0
        nb = num_buckets
        if bidirectional:
            nb //= 2
            relative_buckets += (relative_position > 0).to(lib.long) * nb
            relative_position = lib.abs(relative_position)
        else:
            relative_position = -lib.min(relative_position, lib.zeros_like(relative_position))
        max_exact = nb // 2
        is_small = relative_position < max_exact
        relative_position_if_large = max_exact + (
            lib.log(relative_position.float() / max_exact)
            / math.log(max_distance / max_exact)
            * (nb - max_exact)
        ).to(lib.long)
        relative_position_if_large = lib.min(
            relative_position_if_large, lib.full_like(relative_position_if_large, nb - 1)
        )
        relative_buckets += lib.where(is_small, relative_position, relative_position_if_large)
        return relative_buckets

    class Attention(nn.Module):
        def __init__(self, is_decoder, has_bias):
            super().__init__()
            self.is_decoder = is_decoder
            self.q = nn.Linear(d_model, inner, bias=False)
            self.k = nn.Linear(d_model, inner, bias=False)
            self.v = nn.Linear(d_model, inner, bias=False)
            self.o = nn.Linear(inner, d_model, bias=False)
            self.has_bias = has_bias
            if has_bias:
                self.relative_attention_bias = nn.Embedding(num_buckets, n_heads)

        def compute_bias(self, q_len, k_len):
            device = self.relative_attention_bias.weight.device
            context_position = lib.arange(q_len, dtype=lib.long, device=device)[:, None]
            memory_position = lib.arange(k_len, dtype=lib.long, device=device)[None, :]
            relative_position = memory_position - context_position
            buckets = relative_position_bucket(relative_position, bidirectional=not self.is_decoder)
            values = self.relative_attention_bias(buckets)
            return values.permute([2, 0, 1]).unsqueeze(0)

        def forward(self, x, mask, kv=None, position_bias=None):
            B, T, _ = x.shape
            src = x if kv is None else kv
            S = src.shape[1]

            def shape(t, n):
                return t.view(B, n, n_heads, d_kv).transpose(1, 2)

            q, k, v = shape(self.q(x), T), shape(self.k(src), S), shape(self.v(src), S)
            scores = lib.matmul(q, k.transpose(3, 2))
            if position_bias is None:
                if self.has_bias:
                    position_bias = self.compute_bias(T, S)
                else:
                    position_bias = lib.zeros((1, n_heads, T, S), dtype=scores.dtype)
                position_bias = position_bias + mask
            scores = scores + position_bias
            attn = F.softmax(scores.to(lib.promote_types(scores.dtype, lib.float32)), dim=-1).type_as(scores)
            attn = F.dropout(attn, p=0.0, training=self.training)
            out = lib.matmul(attn, v).transpose(1, 2).contiguous().view(B, -1, inner)
            return self.o(out), position_bias

    class FF(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer_norm = T5LayerNorm(d_model)
            if gated:
                self.wi_0 = nn.Linear(d_model, d_ff, bias=False)
                self.wi_1 = nn.Linear(d_model, d_ff, bias=False)
            else:
                self.wi = nn.Linear(d_model, d_ff, bias=False)
            self.wo = nn.Linear(d_ff, d_model, bias=False)

        def forward(self, x):
            h = self.layer_norm(x)
            if gated:
                h = F.gelu(self.wi_0(h), approximate="tanh") * self.wi_1(h)
            else:
                h = F.relu(self.wi(h))
            return x + self.wo(h)

    class T5(nn.Module):
        def __init__(self):
            super().__init__()
            self.shared = nn.Embedding(vocab, d_model)
            self.enc_ln = T5LayerNorm(d_model)
            self.enc_attn = Attention(False, True)
            self.enc_ff = FF()
            self.enc_final = T5LayerNorm(d_model)
            self.dec_ln = T5LayerNorm(d_model)
            self.dec_attn = Attention(True, True)
            self.cross_ln = T5LayerNorm(d_model)
            self.cross_attn = Attention(True, False)
            self.dec_ff = FF()
            self.dec_final = T5LayerNorm(d_model)
            self.lm_head = nn.Linear(d_model, vocab, bias=False)
            self.lm_head.weight = self.shared.weight

        def forward(self, input_ids, attention_mask, decoder_input_ids, labels):
            dtype = self.shared.weight.dtype
            ext = (1.0 - attention_mask[:, None, None, :].to(dtype)) * lib.finfo(dtype).min
            h = self.shared(input_ids)
            a, _ = self.enc_attn(self.enc_ln(h), ext)
            h = self.enc_ff(h + a)
            enc = self.enc_final(h)
            T = decoder_input_ids.shape[1]
            causal = lib.tril(lib.ones(T, T, dtype=lib.bool))
            dmask = (1.0 - causal[None, None].to(dtype)) * lib.finfo(dtype).min
            d = self.shared(decoder_input_ids)
            a, _ = self.dec_attn(self.dec_ln(d), dmask)
            d = d + a
            a, _ = self.cross_attn(self.cross_ln(d), ext, kv=enc)
            d = self.dec_ff(d + a)
            d = self.dec_final(d) * (d_model ** -0.5)
            logits = self.lm_head(d)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1), ignore_index=-100)
            return logits, loss

    return T5()


# ----------------------------------------------------------------------------------------------------------
# 3. Swin-style block
# ----------------------------------------------------------------------------------------------------------


def swin(lib, dim=16, heads=2, window=4, resolution=8, num_classes=5):
    nn, F = lib.nn, lib.nn.functional

    def window_partition(x, ws):
        B, H, W, C = x.shape
        x = x.view(B, H // ws, ws, W // ws, ws, C)
        return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, ws, ws, C)

    def window_reverse(windows, ws, H, W):
        B = int(windows.shape[0] / (H * W / ws / ws))
        x = windows.view(B, H // ws, W // ws, ws, ws, -1)
        return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(B, H, W, -1)

    class WindowAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.num_heads = heads
            self.scale = (dim // heads) ** -0.5
            self.relative_position_bias_table = nn.Parameter(lib.zeros((2 * window - 1) ** 2, heads))
            coords_h = lib.arange(window)
            coords_w = lib.arange(window)
            coords = lib.stack(lib.meshgrid([coords_h, coords_w], indexing="ij"))
            coords_flatten = lib.flatten(coords, 1)
            relative_coords = coords_flatten[:, :, None] - coords_flatten[:, None, :]
            relative_coords = relative_coords.permute(1, 2, 0).contiguous()
            relative_coords[:, :, 0] += window - 1
            relative_coords[:, :, 1] += window - 1
            relative_coords[:, :, 0] *= 2 * window - 1
            self.register_buffer("relative_position_index", relative_coords.sum(-1))
            self.qkv = nn.Linear(dim, dim * 3)
            self.proj = nn.Linear(dim, dim)
            nn.init.trunc_normal_(self.relative_position_bias_table, std=0.02)

        def forward(self, x, mask=None):
            B_, N, C = x.shape
            qkv = self.qkv(x).reshape(B_, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
            q, k, v = qkv[0], qkv[1], qkv[2]
            q = q * self.scale
            attn = q @ k.transpose(-2, -1)
            bias = self.relative_position_bias_table[self.relative_position_index.view(-1)].view(N, N, -1)
            attn = attn + bias.permute(2, 0, 1).contiguous().unsqueeze(0)
            if mask is not None:
                nW = mask.shape[0]
                attn = attn.view(B_ // nW, nW, self.num_heads, N, N) + mask.unsqueeze(1).unsqueeze(0)
                attn = attn.view(-1, self.num_heads, N, N)
            attn = attn.softmax(dim=-1)
            x = (attn @ v).transpose(1, 2).reshape(B_, N, C)
            return self.proj(x)

    class SwinBlock(nn.Module):
        def __init__(self, shift):
            super().__init__()
            self.shift = shift
            self.norm1 = nn.LayerNorm(dim)
            self.attn = WindowAttention()
            self.norm2 = nn.LayerNorm(dim)
            self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))
            if shift > 0:
                H = W = resolution
                img_mask = lib.zeros((1, H, W, 1))
                cnt = 0
                for h in (slice(0, -window), slice(-window, -shift), slice(-shift, None)):
                    for w in (slice(0, -window), slice(-window, -shift), slice(-shift, None)):
                        img_mask[:, h, w, :] = cnt
                        cnt += 1
                mask_windows = window_partition(img_mask, window).view(-1, window * window)
                attn_mask = mask_windows.unsqueeze(1) - mask_windows.unsqueeze(2)
                attn_mask = attn_mask.masked_fill(attn_mask != 0, -100.0).masked_fill(attn_mask == 0, 0.0)
            else:
                attn_mask = None
            self.register_buffer("attn_mask", attn_mask)

        def forward(self, x):
            H = W = resolution
            B, L, C = x.shape
            shortcut = x
            x = self.norm1(x).view(B, H, W, C)
            if self.shift > 0:
                x = lib.roll(x, shifts=(-self.shift, -self.shift), dims=(1, 2))
            xw = window_partition(x, window).view(-1, window * window, C)
            aw = self.attn(xw, mask=self.attn_mask).view(-1, window, window, C)
            x = window_reverse(aw, window, H, W)
            if self.shift > 0:
                x = lib.roll(x, shifts=(self.shift, self.shift), dims=(1, 2))
            x = shortcut + x.view(B, H * W, C)
            return x + self.mlp(self.norm2(x))

    class PatchMerging(nn.Module):
        def __init__(self):
            super().__init__()
            self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)
            self.norm = nn.LayerNorm(4 * dim)

        def forward(self, x):
            H = W = resolution
            B, L, C = x.shape
            x = x.view(B, H, W, C)
            x0, x1 = x[:, 0::2, 0::2, :], x[:, 1::2, 0::2, :]
            x2, x3 = x[:, 0::2, 1::2, :], x[:, 1::2, 1::2, :]
            x = lib.cat([x0, x1, x2, x3], -1).view(B, -1, 4 * C)
            return self.reduction(self.norm(x))

    class Swin(nn.Module):
        def __init__(self):
            super().__init__()
            self.patch_embed = nn.Conv2d(3, dim, kernel_size=2, stride=2)
            self.blocks = nn.Sequential(SwinBlock(0), SwinBlock(window // 2))
            self.merge = PatchMerging()
            self.norm = nn.LayerNorm(2 * dim)
            self.head = nn.Linear(2 * dim, num_classes)

        def forward(self, images, labels):
            x = self.patch_embed(images).flatten(2).transpose(1, 2)
            x = self.merge(self.blocks(x))
            x = self.norm(x).mean(1)
            logits = self.head(x)
            return logits, F.cross_entropy(logits, labels)

    return Swin()


# ----------------------------------------------------------------------------------------------------------
# 4. UNet / diffusion block
# ----------------------------------------------------------------------------------------------------------


def unet(lib, ch=8, tdim=16, groups=4):
    nn, F = lib.nn, lib.nn.functional

    def timestep_embedding(t, d, dtype, max_period=10000):
        half = d // 2
        freqs = lib.exp(-math.log(max_period) * lib.arange(start=0, end=half, dtype=dtype) / half)
        args = t[:, None].to(dtype) * freqs[None]
        return lib.cat([lib.cos(args), lib.sin(args)], dim=-1)

    class ResBlock(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            self.norm1 = nn.GroupNorm(groups, cin)
            self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
            self.temb = nn.Linear(tdim, cout)
            self.norm2 = nn.GroupNorm(groups, cout)
            self.dropout = nn.Dropout(0.0)
            self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
            self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

        def forward(self, x, emb):
            h = self.conv1(F.silu(self.norm1(x)))
            h = h + self.temb(F.silu(emb))[:, :, None, None]
            h = self.conv2(self.dropout(F.silu(self.norm2(h))))
            return self.skip(x) + h

    class AttnBlock(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.norm = nn.GroupNorm(groups, c)
            self.qkv = nn.Conv2d(c, 3 * c, 1)
            self.proj = nn.Conv2d(c, c, 1)

        def forward(self, x):
            B, C, H, W = x.shape
            q, k, v = self.qkv(self.norm(x)).reshape(B, 3, C, H * W).unbind(1)
            w = lib.einsum("bci,bcj->bij", q, k) * (C ** -0.5)
            w = F.softmax(w, dim=-1)
            h = lib.einsum("bij,bcj->bci", w, v).reshape(B, C, H, W)
            return x + self.proj(h)

    class UNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.time_mlp = nn.Sequential(nn.Linear(tdim, tdim), nn.SiLU(), nn.Linear(tdim, tdim))
            self.conv_in = nn.Conv2d(3, ch, 3, padding=1)
            self.down1 = ResBlock(ch, ch)
            self.downsample = nn.Conv2d(ch, ch, 3, stride=2, padding=1)
            self.down2 = ResBlock(ch, 2 * ch)
            self.mid_attn = AttnBlock(2 * ch)
            self.mid = ResBlock(2 * ch, 2 * ch)
            self.up_conv = nn.Conv2d(2 * ch, ch, 3, padding=1)
            self.up1 = ResBlock(2 * ch, ch)
            self.norm_out = nn.GroupNorm(groups, ch)
            self.conv_out = nn.Conv2d(ch, 3, 3, padding=1)

        def forward(self, x, t, noise):
            emb = self.time_mlp(timestep_embedding(t, tdim, x.dtype))
            h0 = self.conv_in(x)
            h1 = self.down1(h0, emb)
            h = self.down2(self.downsample(h1), emb)
            h = self.mid(self.mid_attn(h), emb)
            h = self.up_conv(F.interpolate(h, scale_factor=2, mode="nearest"))
            h = self.up1(lib.cat([h, h1], dim=1), emb)
            out = self.conv_out(F.silu(self.norm_out(h)))
            return out, F.mse_loss(out, noise)

    return UNet()


# ----------------------------------------------------------------------------------------------------------
# 5. EfficientNet / MobileNetV3 pieces
# ----------------------------------------------------------------------------------------------------------


def mobilenet(lib, drop_path=0.0, num_classes=6):
    nn, F = lib.nn, lib.nn.functional

    def drop_path_fn(x, p, training):
        if p == 0.0 or not training:
            return x
        keep = 1 - p
        shape = (x.shape[0],) + (1,) * (x.ndim - 1)
        random_tensor = keep + lib.rand(shape, dtype=x.dtype, device=x.device)
        random_tensor.floor_()
        return x.div(keep) * random_tensor

    class SqueezeExcitation(nn.Module):
        def __init__(self, c, squeeze):
            super().__init__()
            self.fc1 = nn.Conv2d(c, squeeze, 1)
            self.fc2 = nn.Conv2d(squeeze, c, 1)

        def forward(self, x):
            s = F.adaptive_avg_pool2d(x, 1)
            s = F.hardsigmoid(self.fc2(F.relu(self.fc1(s))))
            return x * s

    class InvertedResidual(nn.Module):
        def __init__(self, cin, exp, cout, k, stride):
            super().__init__()
            self.use_res = stride == 1 and cin == cout
            self.block = nn.Sequential(
                nn.Conv2d(cin, exp, 1, bias=False), nn.BatchNorm2d(exp), nn.Hardswish(),
                nn.Conv2d(exp, exp, k, stride, k // 2, groups=exp, bias=False), nn.BatchNorm2d(exp), nn.Hardswish(),
                SqueezeExcitation(exp, max(exp // 4, 4)),
                nn.Conv2d(exp, cout, 1, bias=False), nn.BatchNorm2d(cout),
            )

        def forward(self, x):
            y = self.block(x)
            if self.use_res:
                y = x + drop_path_fn(y, drop_path, self.training)
            return y

    class MobileNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8), nn.Hardswish())
            self.blocks = nn.Sequential(InvertedResidual(8, 16, 8, 3, 1), InvertedResidual(8, 24, 12, 5, 2),
                                        InvertedResidual(12, 24, 12, 3, 1))
            self.classifier = nn.Sequential(nn.Linear(12, 16), nn.Hardswish(), nn.Dropout(0.0),
                                            nn.Linear(16, num_classes))

        def forward(self, x, labels):
            h = self.blocks(self.stem(x))
            h = F.adaptive_avg_pool2d(h, 1).flatten(1)
            logits = self.classifier(h)
            return logits, F.cross_entropy(logits, labels, label_smoothing=0.1)

    return MobileNet()


# ----------------------------------------------------------------------------------------------------------
# 6. ViT with interpolated position embeddings
# ----------------------------------------------------------------------------------------------------------


def vit(lib, image=16, patch=4, dim=24, heads=3, depth=2, num_classes=5):
    nn, F = lib.nn, lib.nn.functional
    grid = image // patch

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1 = nn.LayerNorm(dim, eps=1e-6)
            self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
            self.norm2 = nn.LayerNorm(dim, eps=1e-6)
            self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

        def forward(self, x):
            h = self.norm1(x)
            x = x + self.attn(h, h, h, need_weights=False)[0]
            return x + self.mlp(self.norm2(x))

    class ViT(nn.Module):
        def __init__(self):
            super().__init__()
            self.patch_embed = nn.Conv2d(3, dim, kernel_size=patch, stride=patch)
            self.cls_token = nn.Parameter(lib.zeros(1, 1, dim))
            self.pos_embed = nn.Parameter(lib.randn(1, grid * grid + 1, dim) * 0.02)
            nn.init.normal_(self.cls_token, std=0.02)
            self.blocks = nn.ModuleList(Block() for _ in range(depth))
            self.norm = nn.LayerNorm(dim, eps=1e-6)
            self.head = nn.Linear(dim, num_classes)

        def interpolate_pos(self, nh, nw):
            if nh == grid and nw == grid:
                return self.pos_embed
            cls_pos, pos = self.pos_embed[:, :1], self.pos_embed[:, 1:]
            pos = pos.reshape(1, grid, grid, dim).permute(0, 3, 1, 2)
            pos = F.interpolate(pos, size=(nh, nw), mode="bicubic", align_corners=False)
            pos = pos.permute(0, 2, 3, 1).reshape(1, nh * nw, dim)
            return lib.cat((cls_pos, pos), dim=1)

        def forward(self, images, labels):
            B = images.shape[0]
            x = self.patch_embed(images)
            nh, nw = x.shape[-2:]
            x = x.flatten(2).transpose(1, 2)
            x = lib.cat((self.cls_token.expand(B, -1, -1), x), dim=1)
            x = x + self.interpolate_pos(nh, nw)
            for block in self.blocks:
                x = block(x)
            logits = self.head(self.norm(x)[:, 0])
            return logits, F.cross_entropy(logits, labels)

    return ViT()


# ----------------------------------------------------------------------------------------------------------
# 7. Conformer / Whisper-style audio frontend with a CTC head
# ----------------------------------------------------------------------------------------------------------


def conformer(lib, n_mels=8, dim=16, heads=2, kernel=7, vocab=6):
    nn, F = lib.nn, lib.nn.functional

    def sinusoids(length, channels, dtype, max_timescale=10000):
        log_timescale_increment = math.log(max_timescale) / (channels // 2 - 1)
        inv_timescales = lib.exp(-log_timescale_increment * lib.arange(channels // 2, dtype=dtype))
        scaled_time = lib.arange(length, dtype=dtype)[:, None] * inv_timescales[None, :]
        return lib.cat([lib.sin(scaled_time), lib.cos(scaled_time)], dim=1)

    class ConvModule(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = nn.LayerNorm(dim)
            self.pw1 = nn.Conv1d(dim, 2 * dim, 1)
            self.dw = nn.Conv1d(dim, dim, kernel, padding=kernel // 2, groups=dim, bias=False)  # BatchNorm follows
            self.bn = nn.BatchNorm1d(dim)
            self.pw2 = nn.Conv1d(dim, dim, 1)

        def forward(self, x):  # (B, T, D)
            h = self.norm(x).transpose(1, 2)
            h = F.glu(self.pw1(h), dim=1)
            h = F.silu(self.bn(self.dw(h)))
            return x + self.pw2(h).transpose(1, 2)

    class FeedForward(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, 2 * dim), nn.SiLU(), nn.Linear(2 * dim, dim))

        def forward(self, x):
            return x + 0.5 * self.net(x)

    class ConformerBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.ff1 = FeedForward()
            self.attn_norm = nn.LayerNorm(dim)
            self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
            self.conv = ConvModule()
            self.ff2 = FeedForward()
            self.final = nn.LayerNorm(dim)

        def forward(self, x, pad_mask):
            x = self.ff1(x)
            h = self.attn_norm(x)
            x = x + self.attn(h, h, h, key_padding_mask=pad_mask, need_weights=False)[0]
            x = self.conv(x)
            return self.final(self.ff2(x))

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv1d(n_mels, dim, kernel_size=3, padding=1)
            self.conv2 = nn.Conv1d(dim, dim, kernel_size=3, stride=2, padding=1)
            self.block = ConformerBlock()
            self.ctc = nn.Linear(dim, vocab)

        def forward(self, mels, lengths, targets, target_lengths):
            x = F.gelu(self.conv1(mels))
            x = F.gelu(self.conv2(x)).permute(0, 2, 1)
            T = x.shape[1]
            x = x + sinusoids(T, dim, x.dtype)
            out_lengths = (lengths - 1) // 2 + 1
            pad_mask = lib.arange(T)[None, :] >= out_lengths[:, None]
            x = self.block(x, pad_mask)
            log_probs = F.log_softmax(self.ctc(x), dim=-1)
            loss = F.ctc_loss(log_probs.transpose(0, 1), targets, out_lengths, target_lengths,
                              blank=0, reduction="mean", zero_infinity=True)
            return log_probs, loss

    return Model()


# ----------------------------------------------------------------------------------------------------------
# the harness
# ----------------------------------------------------------------------------------------------------------


def build(lib, factory, kwargs, dtype, state=None):
    model = factory(lib, **kwargs)
    model.to(getattr(lib, dtype))
    if state is not None:
        model.load_state_dict({k: lib.tensor(v) for k, v in state.items()})
    return model


def state_of(model):
    return {k: _np(v).copy() for k, v in model.state_dict().items()}


def to_lib(lib, batch, dtype):
    out = []
    for a in batch:
        a = np.asarray(a)
        if a.dtype.kind == "f":
            a = a.astype(dtype)
        out.append(lib.tensor(a))
    return out


def train(lib, forward, model, batch, steps=3, lr=1e-3, seed=None, train_mode=True):
    """Run `steps` AdamW steps; record the first step's outputs, loss and gradients, then the end parameters."""
    model.train(train_mode)
    opt = lib.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    record = {}
    if seed is not None:
        lib.manual_seed(seed)
    for step in range(steps):
        opt.zero_grad()
        out, loss = forward(*batch)
        loss.backward()
        if step == 0:
            record["out"] = _np(out).copy()
            record["loss"] = _np(loss).copy()
            for name, p in model.named_parameters():
                record["grad:" + name] = _np(p.grad).copy() if p.grad is not None else None
            # running statistics after one forward: later ones also carry the parameters' noise (see compare)
            for name, b in model.named_buffers():
                record["buffer:" + name] = _np(b).copy()
        opt.step()
    for name, p in model.named_parameters():
        record["param:" + name] = _np(p).copy()
    return record


def compare(got, want, rtol, atol, step_size=6.1e-3):
    """Every mismatching key, with its largest error; empty when all agree.

    A gradient that is zero in exact arithmetic (an attention key bias: softmax ignores a per-query constant; a
    bias a train-mode BatchNorm later subtracts) is rounding noise on both sides, which Adam's normalisation
    turns into a full lr-sized step in a random direction: those parameter entries (reference gradient under
    1e-5 of the largest gradient) may differ by up to `step_size` (2 * steps * lr: opposite directions)."""
    problems = []
    assert set(got) == set(want), set(got) ^ set(want)
    grads = [np.abs(g).max() for k, g in want.items() if k.startswith("grad:") and g is not None and g.size]
    floor = 1e-5 * max(grads, default=0.0)
    for key in want:
        a, b = got[key], want[key]
        if b is None or a is None:
            if a is not b:
                problems.append(f"{key}: grad None in one only")
            continue
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            problems.append(f"{key}: shape {a.shape} vs {b.shape}")
            continue
        if a.dtype.kind in "fc":
            a, b = a.astype(np.float64), b.astype(np.float64)
        tolerance = atol
        grad = want.get("grad:" + key[len("param:"):]) if key.startswith("param:") else None
        if grad is not None:
            noise = np.abs(grad) <= floor
            tolerance = np.where(noise, step_size, atol)
        if not np.all(np.isclose(a, b, rtol=rtol, atol=0, equal_nan=True) | (np.abs(a - b) <= tolerance)):
            err = np.abs(a - b).max()
            problems.append(f"{key}: max abs err {err:.3g} (scale {np.abs(b).max():.3g})")
    return problems
