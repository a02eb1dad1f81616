"""Round 23c's real programs, each written once against a library `lib` (torch or ember) the way its original is,
run under both with torch's initial weights and compared:

1. word2vec skip-gram with negative sampling (the common `SkipGramModel` of the PyTorch word2vec repos): sparse
   nn.Embedding with SparseAdam, unigram**0.75 negatives from torch.multinomial, bmm scores, F.logsigmoid; and a
   dense variant with Adagrad.
2. NeRF (yenchenlin/nerf-pytorch's run_nerf.py): positional encoding, stratified ray sampling, raw2outputs'
   volume rendering with an exclusive cumprod, sample_pdf's hierarchical sampling (searchsorted right=True,
   gather, sort), img2mse / mse2psnr, exponential lr decay by hand.
3. GAT (a PyG-style GATConv in plain torch): self loops, index_select, torch_scatter's softmax via
   scatter_reduce(amax, include_self=False), scatter_add_ / index_add_, leaky_relu, elu, masked NLL, Adam with
   weight decay.
4. BiLSTM-CRF (the batched CRF of the pytorch-crf / tutorial lineage): logsumexp forward algorithm, gold-path
   score with gather, Viterbi with max-over-dim backpointers, pack_padded_sequence(enforce_sorted=False).
5. U-Net (the original valid-convolution U-Net, milesial-style blocks): double conv + BN, MaxPool2d,
   ConvTranspose2d, center-crop skip connections, BCEWithLogits(pos_weight) + soft Dice, OneCycleLR,
   clip_grad_norm_.
6. VAE with torch.distributions (Normal rsample, kl_divergence, Independent, Bernoulli(logits)), an IWAE bound,
   and a DCGAN discriminator with both spectral_norm flavours.

Randomness that the two libraries cannot share (negatives, jitter, dropout masks, reparameterisation noise) is
drawn once with NumPy and passed in; the library's own random calls are still made and checked for shape, dtype,
range and their statistics.  Then the focused tests of what the programs found.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import ember  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from _records import _np, compare, record_params, run_both, setup  # noqa: E402, F401

# ================================================================================================ 1. word2vec


def skipgram_module(lib, sparse: bool):
    nn, F = lib.nn, lib.nn.functional
    torch_ = lib

    class SkipGramModel(nn.Module):
        def __init__(self, emb_size, emb_dimension):
            super().__init__()
            self.emb_size = emb_size
            self.emb_dimension = emb_dimension
            self.u_embeddings = nn.Embedding(emb_size, emb_dimension, sparse=sparse)
            self.v_embeddings = nn.Embedding(emb_size, emb_dimension, sparse=sparse)
            initrange = 1.0 / self.emb_dimension
            nn.init.uniform_(self.u_embeddings.weight.data, -initrange, initrange)
            nn.init.constant_(self.v_embeddings.weight.data, 0)

        def forward(self, pos_u, pos_v, neg_v):
            emb_u = self.u_embeddings(pos_u)
            emb_v = self.v_embeddings(pos_v)
            emb_neg_v = self.v_embeddings(neg_v)

            score = torch_.sum(torch_.mul(emb_u, emb_v), dim=1)
            score = torch_.clamp(score, max=10, min=-10)
            score = -F.logsigmoid(score)

            neg_score = torch_.bmm(emb_neg_v, emb_u.unsqueeze(2)).squeeze()
            neg_score = torch_.clamp(neg_score, max=10, min=-10)
            neg_score = -torch_.sum(F.logsigmoid(-neg_score), dim=1)

            return torch_.mean(score + neg_score)

    return SkipGramModel


def _word2vec_optimizer(lib, model, sparse: bool, optimizer: str):
    if optimizer == "SparseAdam":
        return lib.optim.SparseAdam(list(model.parameters()), lr=0.05)
    return lib.optim.Adagrad(model.parameters(), lr=0.1, lr_decay=0.01, initial_accumulator_value=0.1)


def word2vec(lib, data, state, workdir, sparse=True, optimizer="SparseAdam"):
    torch_ = lib
    vocab = len(data["counts"])
    model = skipgram_module(lib, sparse)(vocab, 8)
    # (the u embeddings were uniform-initialised in torch; v starts at zero in both)
    model.u_embeddings.weight.data.normal_(0, 0.3)  # a non-zero start for v would be seeded differently
    state = setup(lib, {"model": model}, state)
    record = {"keys": sorted(model.state_dict())}

    # negatives from the unigram distribution raised to 3/4, as in the paper
    word_frequency = torch_.tensor(data["counts"], dtype=torch_.float)
    unigram = word_frequency.pow(0.75)
    unigram = unigram / unigram.sum()
    record["unigram"] = _np(unigram)
    drawn = torch_.multinomial(unigram, 5 * 4, replacement=True).view(4, 5)
    record["negatives_drawn_ok"] = bool(drawn.dtype == torch_.int64 and tuple(drawn.shape) == (4, 5)
                                        and int(drawn.min()) >= 0 and int(drawn.max()) < vocab)
    many = torch_.multinomial(unigram, 20000, replacement=True)
    freq = torch_.bincount(many, minlength=vocab).float() / 20000
    record["multinomial_close"] = bool((freq - unigram).abs().max().item() < 0.02)
    no_repl = torch_.multinomial(unigram, vocab, replacement=False)
    record["without_replacement_is_permutation"] = sorted(no_repl.tolist()) == list(range(vocab))

    optimizer = _word2vec_optimizer(lib, model, sparse, optimizer)
    losses, grads_sparse = [], []
    for pos_u, pos_v, neg_v in data["batches"]:
        pos_u, pos_v, neg_v = (torch_.LongTensor(x) for x in (pos_u, pos_v, neg_v))
        optimizer.zero_grad()
        loss = model.forward(pos_u, pos_v, neg_v)
        loss.backward()
        grads_sparse.append(bool(model.u_embeddings.weight.grad.is_sparse))
        if sparse:
            grad = model.v_embeddings.weight.grad
            record.setdefault("grad_v_dense", _np(grad.to_dense()))
            record.setdefault("grad_v_coalesced_nnz", int(grad.coalesce()._nnz()))
            record.setdefault("grad_v_indices", sorted(set(grad.coalesce().indices()[0].tolist())))
        optimizer.step()
        losses.append(loss.item())
    record["loss"] = np.array(losses)
    record["grads_sparse"] = grads_sparse
    record_params(record, "model", model)

    # nearest neighbours by cosine similarity of the normalised input vectors (the usual evaluation)
    emb = torch_.nn.functional.normalize(model.u_embeddings.weight.detach(), dim=1)
    sim = emb @ emb.t()
    sim.fill_diagonal_(-1)
    record["neighbours"] = sim.topk(2, dim=1).indices.tolist()
    record["sim"] = _np(sim)

    path = f"{workdir}/w2v_{lib.__name__}.pt"
    torch_.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, path)
    return record, state


def _word2vec_data():
    rng = np.random.default_rng(0)
    counts = rng.integers(1, 50, 12).tolist()
    batches = [(rng.integers(0, 12, 4), rng.integers(0, 12, 4), rng.integers(0, 12, (4, 5))) for _ in range(8)]
    return {"counts": counts, "batches": batches}


@pytest.mark.parametrize("sparse,optimizer", [(True, "SparseAdam"), (True, "Adagrad"), (False, "Adagrad")],
                         ids=["sparse-SparseAdam", "sparse-Adagrad", "dense-Adagrad"])
def test_word2vec_matches_torch(tmp_path, sparse, optimizer):
    """Sparse embedding gradients (uncoalesced: v_embeddings is looked up twice), SparseAdam or Adagrad's
    sparse path, dense Adagrad with lr_decay; multinomial negatives; cosine nearest neighbours; checkpoints
    with the optimizer state crossing between the libraries."""
    got, want, _ = run_both(word2vec, _word2vec_data(), str(tmp_path), sparse=sparse, optimizer=optimizer)
    assert not compare(got, want)
    assert got["negatives_drawn_ok"] and got["multinomial_close"] and got["without_replacement_is_permutation"]
    assert got["grads_sparse"] == [sparse] * 8
    for src, dst in (("torch", ember), ("ember", torch)):
        ckpt = dst.load(f"{tmp_path}/w2v_{src}.pt")
        model = skipgram_module(dst, sparse)(12, 8)
        model.load_state_dict(ckpt["model"])
        opt = _word2vec_optimizer(dst, model, sparse, optimizer)
        opt.load_state_dict(ckpt["optimizer"])
        assert np.allclose(_np(model.u_embeddings.weight), want["param:model.u_embeddings.weight"], rtol=1e-4,
                           atol=1e-5)
        state = opt.state_dict()["state"][0]
        assert set(state) == ({"step", "exp_avg", "exp_avg_sq"} if optimizer == "SparseAdam" else {"step", "sum"})


# ================================================================================================ 2. NeRF


def nerf_module(lib):
    nn, F = lib.nn, lib.nn.functional
    torch_ = lib

    class NeRF(nn.Module):
        def __init__(self, D=4, W=32, input_ch=3, input_ch_views=3, output_ch=4, skips=(2,), use_viewdirs=True):
            super().__init__()
            self.D, self.W = D, W
            self.input_ch = input_ch
            self.input_ch_views = input_ch_views
            self.skips = list(skips)
            self.use_viewdirs = use_viewdirs
            self.pts_linears = nn.ModuleList(
                [nn.Linear(input_ch, W)]
                + [nn.Linear(W, W) if i not in self.skips else nn.Linear(W + input_ch, W) for i in range(D - 1)])
            self.views_linears = nn.ModuleList([nn.Linear(input_ch_views + W, W // 2)])
            if use_viewdirs:
                self.feature_linear = nn.Linear(W, W)
                self.alpha_linear = nn.Linear(W, 1)
                self.rgb_linear = nn.Linear(W // 2, 3)
            else:
                self.output_linear = nn.Linear(W, output_ch)

        def forward(self, x):
            input_pts, input_views = torch_.split(x, [self.input_ch, self.input_ch_views], dim=-1)
            h = input_pts
            for i, _ in enumerate(self.pts_linears):
                h = self.pts_linears[i](h)
                h = F.relu(h)
                if i in self.skips:
                    h = torch_.cat([input_pts, h], -1)
            if self.use_viewdirs:
                alpha = self.alpha_linear(h)
                feature = self.feature_linear(h)
                h = torch_.cat([feature, input_views], -1)
                for i, _ in enumerate(self.views_linears):
                    h = self.views_linears[i](h)
                    h = F.relu(h)
                rgb = self.rgb_linear(h)
                outputs = torch_.cat([rgb, alpha], -1)
            else:
                outputs = self.output_linear(h)
            return outputs

    return NeRF


class Embedder:
    """nerf-pytorch's positional encoder: x, sin(2^k x), cos(2^k x) for k < multires."""

    def __init__(self, lib, multires):
        torch_ = lib
        self.embed_fns = [lambda x: x]
        freq_bands = 2.0 ** torch_.linspace(0.0, multires - 1, steps=multires)
        for freq in freq_bands:
            for p_fn in (torch_.sin, torch_.cos):
                self.embed_fns.append(lambda x, p_fn=p_fn, freq=freq: p_fn(x * freq))
        self.out_dim = 3 + 3 * 2 * multires
        self.lib = lib

    def embed(self, inputs):
        return self.lib.cat([fn(inputs) for fn in self.embed_fns], -1)


def posenc_arange(lib, x, L):
    """The vectorised variant (2**arange frequencies, broadcast, flatten) used by many re-implementations."""
    freq = 2.0 ** lib.arange(L, dtype=lib.float32) * math.pi
    xb = x[..., None, :] * freq[:, None]
    return lib.cat([x, lib.cat([lib.sin(xb), lib.cos(xb)], dim=-1).flatten(-2)], dim=-1)


def raw2outputs(lib, raw, z_vals, rays_d, white_bkgd=False):
    torch_, F = lib, lib.nn.functional

    def raw2alpha(raw, dists, act_fn=F.relu):
        return 1.0 - torch_.exp(-act_fn(raw) * dists)

    dists = z_vals[..., 1:] - z_vals[..., :-1]
    dists = torch_.cat([dists, torch_.Tensor([1e10]).expand(dists[..., :1].shape)], -1)
    dists = dists * torch_.norm(rays_d[..., None, :], dim=-1)
    rgb = torch_.sigmoid(raw[..., :3])
    alpha = raw2alpha(raw[..., 3], dists)
    weights = alpha * torch_.cumprod(torch_.cat([torch_.ones((alpha.shape[0], 1)), 1.0 - alpha + 1e-10], -1),
                                     -1)[:, :-1]
    rgb_map = torch_.sum(weights[..., None] * rgb, -2)
    depth_map = torch_.sum(weights * z_vals, -1)
    disp_map = 1.0 / torch_.max(1e-10 * torch_.ones_like(depth_map), depth_map / torch_.sum(weights, -1))
    acc_map = torch_.sum(weights, -1)
    if white_bkgd:
        rgb_map = rgb_map + (1.0 - acc_map[..., None])
    return rgb_map, disp_map, acc_map, weights, depth_map


def sample_pdf(lib, bins, weights, N_samples, det=False, u=None):
    torch_ = lib
    weights = weights + 1e-5  # prevent nans
    pdf = weights / torch_.sum(weights, -1, keepdim=True)
    cdf = torch_.cumsum(pdf, -1)
    cdf = torch_.cat([torch_.zeros_like(cdf[..., :1]), cdf], -1)
    if det:
        u = torch_.linspace(0.0, 1.0, steps=N_samples)
        u = u.expand(list(cdf.shape[:-1]) + [N_samples])
    elif u is None:
        u = torch_.rand(list(cdf.shape[:-1]) + [N_samples])
    u = u.contiguous()
    inds = torch_.searchsorted(cdf, u, right=True)
    below = torch_.max(torch_.zeros_like(inds - 1), inds - 1)
    above = torch_.min((cdf.shape[-1] - 1) * torch_.ones_like(inds), inds)
    inds_g = torch_.stack([below, above], -1)
    matched_shape = [inds_g.shape[0], inds_g.shape[1], cdf.shape[-1]]
    cdf_g = torch_.gather(cdf.unsqueeze(1).expand(matched_shape), 2, inds_g)
    bins_g = torch_.gather(bins.unsqueeze(1).expand(matched_shape), 2, inds_g)
    denom = cdf_g[..., 1] - cdf_g[..., 0]
    denom = torch_.where(denom < 1e-5, torch_.ones_like(denom), denom)
    t = (u - cdf_g[..., 0]) / denom
    samples = bins_g[..., 0] + t * (bins_g[..., 1] - bins_g[..., 0])
    return samples


def nerf(lib, data, state, workdir):
    torch_ = lib
    embed = Embedder(lib, 4)
    embeddirs = Embedder(lib, 2)
    NeRF = nerf_module(lib)
    model = NeRF(input_ch=embed.out_dim, input_ch_views=embeddirs.out_dim)
    model_fine = NeRF(input_ch=embed.out_dim, input_ch_views=embeddirs.out_dim)
    state = setup(lib, {"coarse": model, "fine": model_fine}, state)
    record = {"keys": sorted(model.state_dict())}
    grad_vars = list(model.parameters()) + list(model_fine.parameters())
    lrate, lrate_decay = 5e-3, 2
    optimizer = torch_.optim.Adam(params=grad_vars, lr=lrate, betas=(0.9, 0.999))
    img2mse = lambda x, y: torch_.mean((x - y) ** 2)
    mse2psnr = lambda x: -10.0 * torch_.log(x) / torch_.log(torch_.Tensor([10.0]))
    near, far, N_samples, N_importance = 2.0, 6.0, 8, 8

    def run_network(net, pts, viewdirs):
        inputs_flat = torch_.reshape(pts, [-1, pts.shape[-1]])
        embedded = embed.embed(inputs_flat)
        input_dirs = viewdirs[:, None].expand(pts.shape)
        input_dirs_flat = torch_.reshape(input_dirs, [-1, input_dirs.shape[-1]])
        embedded = torch_.cat([embedded, embeddirs.embed(input_dirs_flat)], -1)
        outputs_flat = net(embedded)
        return torch_.reshape(outputs_flat, list(pts.shape[:-1]) + [outputs_flat.shape[-1]])

    def render_rays(rays_o, rays_d, t_rand, u, perturb=1.0):
        viewdirs = rays_d / torch_.norm(rays_d, dim=-1, keepdim=True)
        N_rays = rays_o.shape[0]
        t_vals = torch_.linspace(0.0, 1.0, steps=N_samples)
        z_vals = near * (1.0 - t_vals) + far * t_vals
        z_vals = z_vals.expand([N_rays, N_samples])
        if perturb > 0.0:
            mids = 0.5 * (z_vals[..., 1:] + z_vals[..., :-1])
            upper = torch_.cat([mids, z_vals[..., -1:]], -1)
            lower = torch_.cat([z_vals[..., :1], mids], -1)
            z_vals = lower + (upper - lower) * t_rand
        pts = rays_o[..., None, :] + rays_d[..., None, :] * z_vals[..., :, None]
        raw = run_network(model, pts, viewdirs)
        rgb_map_0, disp_map_0, acc_map_0, weights, depth_map = raw2outputs(lib, raw, z_vals, rays_d)
        z_vals_mid = 0.5 * (z_vals[..., 1:] + z_vals[..., :-1])
        z_samples = sample_pdf(lib, z_vals_mid, weights[..., 1:-1], N_importance, det=u is None, u=u)
        z_samples = z_samples.detach()
        z_vals, _ = torch_.sort(torch_.cat([z_vals, z_samples], -1), -1)
        pts = rays_o[..., None, :] + rays_d[..., None, :] * z_vals[..., :, None]
        raw = run_network(model_fine, pts, viewdirs)
        rgb_map, disp_map, acc_map, weights, depth_map = raw2outputs(lib, raw, z_vals, rays_d)
        return {"rgb_map": rgb_map, "disp_map": disp_map, "acc_map": acc_map, "rgb0": rgb_map_0,
                "z_vals": z_vals, "depth_map": depth_map}

    losses, psnrs, lrs = [], [], []
    for step, (rays_o, rays_d, target_s, t_rand, u) in enumerate(data["steps"]):
        rays_o, rays_d, target_s = torch_.tensor(rays_o), torch_.tensor(rays_d), torch_.tensor(target_s)
        ret = render_rays(rays_o, rays_d, torch_.tensor(t_rand), torch_.tensor(u))
        optimizer.zero_grad()
        img_loss = img2mse(ret["rgb_map"], target_s)
        loss = img_loss
        psnr = mse2psnr(img_loss)
        img_loss0 = img2mse(ret["rgb0"], target_s)
        loss = loss + img_loss0
        loss.backward()
        optimizer.step()
        decay_rate = 0.1
        decay_steps = lrate_decay * 1000 // 1000 * 3
        new_lrate = lrate * (decay_rate ** ((step + 1) / decay_steps))
        for param_group in optimizer.param_groups:
            param_group["lr"] = new_lrate
        losses.append(loss.item())
        psnrs.append(psnr.item())
        lrs.append(new_lrate)
        if step == 0:
            record["z_vals"] = _np(ret["z_vals"])
            record["disp0"] = _np(ret["disp_map"])
            record["psnr_shape"] = list(psnr.shape)
    record.update(loss=np.array(losses), psnr=np.array(psnrs), lr=np.array(lrs))
    record_params(record, "coarse", model)
    record_params(record, "fine", model_fine)

    with torch_.no_grad():  # deterministic test render: no jitter, det=True sampling
        rays_o, rays_d = torch_.tensor(data["test_o"]), torch_.tensor(data["test_d"])
        ret = render_rays(rays_o, rays_d, None, None, perturb=0.0)
        record.update({f"test_{k}": _np(v) for k, v in ret.items()})
        to8b = lambda x: (255 * np.clip(x, 0, 1)).astype(np.uint8)
        record["test_rgb8"] = to8b(_np(ret["rgb_map"]))
    # the library's own jitter and pdf samples: shapes and ranges
    t_rand = torch_.rand([3, N_samples])
    record["rand_ok"] = bool(t_rand.min() >= 0 and t_rand.max() < 1 and t_rand.dtype == torch_.float32)
    enc = posenc_arange(lib, torch_.tensor(data["test_o"]), 4)
    record["posenc_arange"] = _np(enc)
    return record, state


def _nerf_data():
    rng = np.random.default_rng(0)

    def rays(n):
        o = rng.normal(0, 0.3, (n, 3)).astype(np.float32)
        d = rng.normal(0, 1, (n, 3)).astype(np.float32)
        d[:, 2] = np.abs(d[:, 2]) + 0.5
        return o, d

    steps = []
    for _ in range(6):
        o, d = rays(16)
        steps.append((o, d, rng.uniform(0, 1, (16, 3)).astype(np.float32),
                      rng.uniform(0, 1, (16, 8)).astype(np.float32), rng.uniform(0, 1, (16, 8)).astype(np.float32)))
    test_o, test_d = rays(5)
    return {"steps": steps, "test_o": test_o, "test_d": test_d}


def test_nerf_matches_torch(tmp_path):
    got, want, _ = run_both(nerf, _nerf_data(), str(tmp_path))
    assert got["rand_ok"]
    # test_rgb8: uint8 rounding can flip by one where a float lies near a step
    got_rgb8, want_rgb8 = got.pop("test_rgb8"), want.pop("test_rgb8")
    assert np.abs(got_rgb8.astype(int) - want_rgb8.astype(int)).max() <= 1
    assert not compare(got, want)


# ================================================================================================ 3. GAT


def gat_module(lib):
    nn, F = lib.nn, lib.nn.functional
    torch_ = lib

    def softmax(src, index, num_nodes, detach_max=True):
        """torch_geometric.utils.softmax: subtract the per-destination max, exponentiate, normalise."""
        expanded = index.unsqueeze(-1).expand_as(src)
        src_max = torch_.zeros(num_nodes, src.size(1), dtype=src.dtype).scatter_reduce(
            0, expanded, src.detach() if detach_max else src, reduce="amax", include_self=False)
        out = (src - src_max.index_select(0, index)).exp()
        out_sum = torch_.zeros(num_nodes, src.size(1), dtype=src.dtype).scatter_add_(0, expanded, out)
        return out / (out_sum.index_select(0, index) + 1e-16)

    class GATConv(nn.Module):
        def __init__(self, in_channels, out_channels, heads=1, concat=True, negative_slope=0.2, dropout=0.0,
                     detach_max=True):
            super().__init__()
            self.heads, self.out_channels, self.concat = heads, out_channels, concat
            self.negative_slope, self.dropout, self.detach_max = negative_slope, dropout, detach_max
            self.lin = nn.Linear(in_channels, heads * out_channels, bias=False)
            self.att_src = nn.Parameter(torch_.empty(1, heads, out_channels))
            self.att_dst = nn.Parameter(torch_.empty(1, heads, out_channels))
            self.bias = nn.Parameter(torch_.empty(heads * out_channels if concat else out_channels))
            self.reset_parameters()

        def reset_parameters(self):
            nn.init.xavier_uniform_(self.lin.weight)
            nn.init.xavier_uniform_(self.att_src)
            nn.init.xavier_uniform_(self.att_dst)
            nn.init.zeros_(self.bias)

        def forward(self, x, edge_index):
            N, H, C = x.size(0), self.heads, self.out_channels
            # add_self_loops
            loop = torch_.arange(N, dtype=torch_.long).unsqueeze(0).repeat(2, 1)
            edge_index = torch_.cat([edge_index, loop], dim=1)
            src, dst = edge_index[0], edge_index[1]
            h = self.lin(x).view(-1, H, C)
            alpha_src = (h * self.att_src).sum(dim=-1)
            alpha_dst = (h * self.att_dst).sum(dim=-1)
            alpha = alpha_src.index_select(0, src) + alpha_dst.index_select(0, dst)
            alpha = F.leaky_relu(alpha, self.negative_slope)
            alpha = softmax(alpha, dst, N, self.detach_max)
            self._alpha = alpha
            alpha = F.dropout(alpha, p=self.dropout, training=self.training)
            msg = h.index_select(0, src) * alpha.unsqueeze(-1)
            out = torch_.zeros(N, H, C, dtype=msg.dtype).index_add_(0, dst, msg)
            out = out.view(-1, H * C) if self.concat else out.mean(dim=1)
            return out + self.bias

    class GAT(nn.Module):
        def __init__(self, in_channels, hidden_channels, out_channels, heads, dropout):
            super().__init__()
            self.dropout = dropout
            self.conv1 = GATConv(in_channels, hidden_channels, heads, dropout=dropout)
            self.conv2 = GATConv(hidden_channels * heads, out_channels, heads=1, concat=False, dropout=dropout,
                                 detach_max=False)

        def forward(self, x, edge_index):
            x = F.dropout(x, p=self.dropout, training=self.training)
            x = F.elu(self.conv1(x, edge_index))
            x = F.dropout(x, p=self.dropout, training=self.training)
            x = self.conv2(x, edge_index)
            return F.log_softmax(x, dim=-1)

    return GAT


def gat(lib, data, state, workdir):
    torch_, F = lib, lib.nn.functional
    # dropout masks cannot be shared: the compared run trains with p=0 (the calls still go through F.dropout)
    model = gat_module(lib)(6, 4, 3, heads=2, dropout=0.0)
    state = setup(lib, {"model": model}, state)
    record = {"keys": sorted(model.state_dict())}
    x = torch_.tensor(data["x"])
    edge_index = torch_.LongTensor(data["edge_index"])
    y = torch_.from_numpy(data["y"])
    train_mask, test_mask = torch_.tensor(data["train_mask"]), torch_.tensor(data["test_mask"])
    optimizer = torch_.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    losses, accs = [], []
    for _epoch in range(8):
        model.train()
        optimizer.zero_grad()
        out = model(x, edge_index)
        loss = F.nll_loss(out[train_mask], y[train_mask])
        loss.backward()
        optimizer.step()
        losses.append(float(loss))
        model.eval()
        pred = model(x, edge_index).argmax(dim=1)
        correct = (pred[test_mask] == y[test_mask]).sum()
        accs.append(int(correct) / int(test_mask.sum()))
    record.update(loss=np.array(losses), acc=np.array(accs))
    record["alpha"] = _np(model.conv1._alpha)
    with torch_.no_grad():
        record["eval_out"] = _np(model(x, edge_index))
    record_params(record, "model", model)
    # attention rows sum to one per destination
    dst = torch_.cat([edge_index[1], torch_.arange(x.size(0))])
    sums = torch_.zeros(x.size(0), 2).index_add_(0, dst, model.conv1._alpha)
    record["alpha_sums_one"] = bool(torch_.allclose(sums, torch_.ones_like(sums), atol=1e-5))
    # a real dropout run: inverted-dropout scaling on the kept entries
    dropped = F.dropout(torch_.ones(2000), p=0.6, training=True)
    kept = dropped[dropped != 0]
    record["dropout_ok"] = bool(torch_.allclose(kept, torch_.full_like(kept, 2.5)) and 600 < kept.numel() < 1000)
    torch_.save(model.state_dict(), f"{workdir}/gat_{lib.__name__}.pt")
    return record, state


def _gat_data():
    rng = np.random.default_rng(0)
    n, e = 10, 24
    src = rng.integers(0, n, e)
    dst = (src + rng.integers(1, n, e)) % n  # no self loops in the input graph
    mask = np.zeros(n, bool)
    mask[:6] = True
    return {"x": rng.standard_normal((n, 6)).astype(np.float32), "edge_index": np.stack([src, dst]),
            "y": rng.integers(0, 3, n), "train_mask": mask, "test_mask": ~mask}


def test_gat_matches_torch(tmp_path):
    got, want, _ = run_both(gat, _gat_data(), str(tmp_path))
    assert got["alpha_sums_one"] and got["dropout_ok"]
    assert not compare(got, want)
    for src, dst in (("torch", ember), ("ember", torch)):
        model = gat_module(dst)(6, 4, 3, heads=2, dropout=0.6)
        model.load_state_dict(dst.load(f"{tmp_path}/gat_{src}.pt"))
        assert np.allclose(_np(model.conv1.att_src), want["param:model.conv1.att_src"], rtol=1e-4, atol=1e-6)


# ================================================================================================ 4. BiLSTM-CRF


def bilstm_crf_module(lib):
    nn = lib.nn
    torch_ = lib
    from_packed = lib.nn.utils.rnn

    class CRF(nn.Module):
        def __init__(self, num_tags):
            super().__init__()
            self.num_tags = num_tags
            self.start_transitions = nn.Parameter(torch_.empty(num_tags))
            self.end_transitions = nn.Parameter(torch_.empty(num_tags))
            self.transitions = nn.Parameter(torch_.empty(num_tags, num_tags))
            nn.init.uniform_(self.start_transitions, -0.1, 0.1)
            nn.init.uniform_(self.end_transitions, -0.1, 0.1)
            nn.init.uniform_(self.transitions, -0.1, 0.1)

        def forward(self, emissions, tags, mask, reduction="mean"):
            numerator = self._compute_score(emissions, tags, mask)
            denominator = self._compute_normalizer(emissions, mask)
            llh = numerator - denominator
            if reduction == "sum":
                return llh.sum()
            return llh.mean()

        def _compute_score(self, emissions, tags, mask):
            # emissions: (seq_length, batch_size, num_tags), tags / mask: (seq_length, batch_size)
            seq_length, batch_size = tags.shape
            mask = mask.type_as(emissions)
            score = self.start_transitions[tags[0]]
            score += emissions[0, torch_.arange(batch_size), tags[0]]
            for i in range(1, seq_length):
                score += self.transitions[tags[i - 1], tags[i]] * mask[i]
                score += emissions[i, torch_.arange(batch_size), tags[i]] * mask[i]
            seq_ends = mask.long().sum(dim=0) - 1
            last_tags = tags[seq_ends, torch_.arange(batch_size)]
            score += self.end_transitions[last_tags]
            return score

        def _compute_normalizer(self, emissions, mask):
            seq_length = emissions.size(0)
            score = self.start_transitions + emissions[0]
            for i in range(1, seq_length):
                broadcast_score = score.unsqueeze(2)
                broadcast_emissions = emissions[i].unsqueeze(1)
                next_score = broadcast_score + self.transitions + broadcast_emissions
                next_score = torch_.logsumexp(next_score, dim=1)
                score = torch_.where(mask[i].unsqueeze(1), next_score, score)
            score += self.end_transitions
            return torch_.logsumexp(score, dim=1)

        def decode(self, emissions, mask):
            seq_length, batch_size = mask.shape
            score = self.start_transitions + emissions[0]
            history = []
            for i in range(1, seq_length):
                next_score = score.unsqueeze(2) + self.transitions + emissions[i].unsqueeze(1)
                next_score, indices = next_score.max(dim=1)
                score = torch_.where(mask[i].unsqueeze(1), next_score, score)
                history.append(indices)
            score += self.end_transitions
            seq_ends = mask.long().sum(dim=0) - 1
            best_tags_list = []
            for idx in range(batch_size):
                _, best_last_tag = score[idx].max(dim=0)
                best_tags = [best_last_tag.item()]
                for hist in reversed(history[: seq_ends[idx]]):
                    best_last_tag = hist[idx][best_tags[-1]]
                    best_tags.append(best_last_tag.item())
                best_tags.reverse()
                best_tags_list.append(best_tags)
            return best_tags_list, score

        def decode_batched(self, emissions, mask):
            """A vectorised Viterbi: argmax backpointers, followed back with gather, masked with where."""
            seq_length, batch_size = mask.shape
            score = self.start_transitions + emissions[0]
            backpointers = []
            for i in range(1, seq_length):
                next_score = score.unsqueeze(2) + self.transitions + emissions[i].unsqueeze(1)
                indices = next_score.argmax(dim=1)
                next_score = next_score.gather(1, indices.unsqueeze(1)).squeeze(1)
                score = torch_.where(mask[i].unsqueeze(1), next_score, score)
                identity = torch_.arange(self.num_tags).expand(batch_size, -1)
                backpointers.append(torch_.where(mask[i].unsqueeze(1), indices, identity))
            score = score + self.end_transitions
            best = score.argmax(dim=-1, keepdim=True)
            path = [best]
            for bp in reversed(backpointers):
                best = bp.gather(1, best)
                path.append(best)
            path = torch_.cat(path[::-1], dim=1)
            return torch_.where(mask.t(), path, torch_.full_like(path, -1))

    class BiLSTM_CRF(nn.Module):
        def __init__(self, vocab_size, num_tags, embedding_dim, hidden_dim):
            super().__init__()
            self.word_embeds = nn.Embedding(vocab_size, embedding_dim, padding_idx=0)
            self.lstm = nn.LSTM(embedding_dim, hidden_dim // 2, num_layers=1, bidirectional=True,
                                batch_first=True)
            self.hidden2tag = nn.Linear(hidden_dim, num_tags)
            self.crf = CRF(num_tags)

        def _get_lstm_features(self, sentences, lengths):
            embeds = self.word_embeds(sentences)
            packed = from_packed.pack_padded_sequence(embeds, lengths.cpu(), batch_first=True, enforce_sorted=False)
            lstm_out, (h_n, _) = self.lstm(packed)
            lstm_out, out_lengths = from_packed.pad_packed_sequence(lstm_out, batch_first=True,
                                                                    total_length=sentences.size(1))
            self._h_n = h_n
            return self.hidden2tag(lstm_out)

        def neg_log_likelihood(self, sentences, tags, lengths):
            feats = self._get_lstm_features(sentences, lengths)
            mask = sentences != 0
            return -self.crf(feats.transpose(0, 1), tags.t(), mask.t())

        def forward(self, sentences, lengths):
            feats = self._get_lstm_features(sentences, lengths)
            mask = sentences != 0
            return self.crf.decode(feats.transpose(0, 1), mask.t()), \
                self.crf.decode_batched(feats.transpose(0, 1), mask.t())

    return BiLSTM_CRF


def bilstm_crf(lib, data, state, workdir):
    torch_ = lib
    model = bilstm_crf_module(lib)(20, 5, 8, 10)
    state = setup(lib, {"model": model}, state)
    record = {"keys": sorted(model.state_dict())}
    optimizer = torch_.optim.SGD(model.parameters(), lr=0.1, weight_decay=1e-4)
    losses, norms = [], []
    for sentences, tags, lengths in data["batches"]:
        sentences, tags, lengths = torch_.tensor(sentences), torch_.tensor(tags), torch_.tensor(lengths)
        model.zero_grad()
        loss = model.neg_log_likelihood(sentences, tags, lengths)
        loss.backward()
        norms.append(float(torch_.nn.utils.clip_grad_norm_(model.parameters(), 5.0)))
        optimizer.step()
        losses.append(loss.item())
    record.update(loss=np.array(losses), grad_norm=np.array(norms))
    record["h_n"] = _np(model._h_n)
    record_params(record, "model", model)
    with torch_.no_grad():
        sentences, lengths = torch_.tensor(data["test"][0]), torch_.tensor(data["test"][1])
        (paths, score), batched = model(sentences, lengths)
    record["paths"] = paths
    record["viterbi_score"] = _np(score)
    record["paths_batched"] = batched.tolist()
    record["paths_agree"] = [p for p in batched.tolist()] == [p + [-1] * (sentences.size(1) - len(p))
                                                               for p in paths]
    torch_.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()},
                f"{workdir}/crf_{lib.__name__}.pt")
    return record, state


def _crf_data():
    rng = np.random.default_rng(0)

    def batch(b, t):
        lengths = rng.integers(2, t + 1, b)
        lengths[rng.integers(0, b)] = t
        sentences = rng.integers(1, 20, (b, t))
        tags = rng.integers(0, 5, (b, t))
        for i, n in enumerate(lengths):
            sentences[i, n:] = 0
            tags[i, n:] = 0
        return sentences, tags, lengths

    return {"batches": [batch(4, 7) for _ in range(6)], "test": batch(5, 7)[::2]}


def test_bilstm_crf_matches_torch(tmp_path):
    got, want, _ = run_both(bilstm_crf, _crf_data(), str(tmp_path))
    assert got["paths_agree"]
    assert not compare(got, want)
    for src, dst in (("torch", ember), ("ember", torch)):
        ckpt = dst.load(f"{tmp_path}/crf_{src}.pt")
        model = bilstm_crf_module(dst)(20, 5, 8, 10)
        model.load_state_dict(ckpt["model"])
        assert np.allclose(_np(model.crf.transitions), want["param:model.crf.transitions"], rtol=1e-4, atol=1e-6)


# ================================================================================================ 5. U-Net


def unet_module(lib):
    nn = lib.nn
    torch_ = lib

    class DoubleConv(nn.Module):
        """(convolution => [BN] => ReLU) * 2, valid convolutions as in the paper"""

        def __init__(self, in_channels, out_channels, mid_channels=None):
            super().__init__()
            if not mid_channels:
                mid_channels = out_channels
            self.double_conv = nn.Sequential(
                nn.Conv2d(in_channels, mid_channels, kernel_size=3, padding=0, bias=False),
                nn.BatchNorm2d(mid_channels),
                nn.ReLU(inplace=True),
                nn.Conv2d(mid_channels, out_channels, kernel_size=3, padding=0, bias=False),
                nn.BatchNorm2d(out_channels),
                nn.ReLU(inplace=True),
            )

        def forward(self, x):
            return self.double_conv(x)

    class Down(nn.Module):
        def __init__(self, in_channels, out_channels):
            super().__init__()
            self.maxpool_conv = nn.Sequential(nn.MaxPool2d(2), DoubleConv(in_channels, out_channels))

        def forward(self, x):
            return self.maxpool_conv(x)

    class Up(nn.Module):
        def __init__(self, in_channels, out_channels):
            super().__init__()
            self.up = nn.ConvTranspose2d(in_channels, in_channels // 2, kernel_size=2, stride=2)
            self.conv = DoubleConv(in_channels, out_channels)

        @staticmethod
        def center_crop(layer, target_size):
            _, _, h, w = layer.size()
            dy, dx = (h - target_size[0]) // 2, (w - target_size[1]) // 2
            return layer[:, :, dy: dy + target_size[0], dx: dx + target_size[1]]

        def forward(self, x1, x2):
            x1 = self.up(x1)
            x2 = self.center_crop(x2, x1.shape[2:])
            x = torch_.cat([x2, x1], dim=1)
            return self.conv(x)

    class UNet(nn.Module):
        def __init__(self, n_channels, n_classes):
            super().__init__()
            self.inc = DoubleConv(n_channels, 4)
            self.down1 = Down(4, 8)
            self.down2 = Down(8, 16)
            self.up1 = Up(16, 8)
            self.up2 = Up(8, 4)
            self.outc = nn.Conv2d(4, n_classes, kernel_size=1)

        def forward(self, x):
            x1 = self.inc(x)
            x2 = self.down1(x1)
            x3 = self.down2(x2)
            x = self.up1(x3, x2)
            x = self.up2(x, x1)
            return self.outc(x)

    return UNet


def dice_loss(lib, logits, target, eps=1e-6):
    probs = lib.sigmoid(logits)
    dims = (1, 2, 3)
    intersection = (probs * target).sum(dim=dims)
    cardinality = probs.sum(dim=dims) + target.sum(dim=dims)
    dice = (2.0 * intersection + eps) / (cardinality + eps)
    return 1.0 - dice.mean()


def unet(lib, data, state, workdir):
    torch_, nn = lib, lib.nn
    model = unet_module(lib)(1, 1)
    state = setup(lib, {"model": model}, state)
    record = {"keys": sorted(model.state_dict())}
    criterion = nn.BCEWithLogitsLoss(pos_weight=torch_.tensor([3.0]))
    optimizer = torch_.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)
    steps = len(data["images"])
    scheduler = torch_.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1e-2, total_steps=steps, pct_start=0.3)
    losses, lrs, betas, norms = [], [], [], []
    model.train()
    for image, mask in zip(data["images"], data["masks"]):
        image, mask = torch_.from_numpy(image), torch_.from_numpy(mask)
        logits = model(image)
        mask = Up_crop(mask, logits.shape[2:])
        loss = criterion(logits, mask) + dice_loss(lib, logits, mask)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        record.setdefault("up_bias_grad_max", model.up1.up.bias.grad.abs().max().item())
        norms.append(nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0).item())
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
        lrs.append(scheduler.get_last_lr()[0])
        betas.append(optimizer.param_groups[0]["betas"][0])
    record.update(loss=np.array(losses), lr=np.array(lrs), beta1=np.array(betas), grad_norm=np.array(norms))
    record["logits_shape"] = list(logits.shape)
    record_params(record, "model", model)
    model.eval()
    with torch_.no_grad():
        logits = model(torch_.from_numpy(data["images"][0]))
        record["eval_logits"] = _np(logits)
        record["eval_mask"] = _np((torch_.sigmoid(logits) > 0.5).float())
    torch_.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                 "scheduler": scheduler.state_dict()}, f"{workdir}/unet_{lib.__name__}.pt")
    return record, state


def Up_crop(layer, target_size):
    _, _, h, w = layer.size()
    dy, dx = (h - target_size[0]) // 2, (w - target_size[1]) // 2
    return layer[:, :, dy: dy + target_size[0], dx: dx + target_size[1]]


def _unet_data():
    rng = np.random.default_rng(0)
    images = [rng.standard_normal((2, 1, 44, 44)).astype(np.float32) for _ in range(6)]
    masks = [(img > 0.8).astype(np.float32) for img in images]
    return {"images": images, "masks": masks}


def test_unet_matches_torch(tmp_path):
    got, want, _ = run_both(unet, _unet_data(), str(tmp_path))
    assert got["logits_shape"] == [2, 1, 4, 4]
    # The up-convolutions' biases feed a bias-free conv and then BatchNorm, which removes any per-channel
    # constant: their gradient is zero in exact arithmetic, both libraries' are rounding noise (checked below)
    # that AdamW turns into lr-sized steps of either sign; the BN right after them, and the eval outputs that
    # use its running mean, inherit that.
    assert got.pop("up_bias_grad_max") < 1e-6 and want.pop("up_bias_grad_max") < 1e-6
    looser = {"up.bias": (0, 2e-2), "conv.double_conv.1.running_mean": (0, 2e-3), "eval_logits": (0, 2e-3)}
    # The thresholded mask may differ only where a logit lies within that tolerance of the 0.5 boundary.
    got_mask, want_mask = got.pop("eval_mask"), want.pop("eval_mask")
    decided = np.abs(want["eval_logits"]) > 2e-3
    assert decided.sum() >= decided.size // 2
    np.testing.assert_array_equal(got_mask[decided], want_mask[decided])
    assert not compare(got, want, looser=looser)
    for src, dst in (("torch", ember), ("ember", torch)):
        ckpt = dst.load(f"{tmp_path}/unet_{src}.pt")
        model = unet_module(dst)(1, 1)
        model.load_state_dict(ckpt["model"])
        optimizer = dst.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)
        scheduler = dst.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1e-2, total_steps=8, pct_start=0.3)
        optimizer.load_state_dict(ckpt["optimizer"])
        scheduler.load_state_dict(ckpt["scheduler"])
        assert scheduler.last_epoch == 6 and scheduler.total_steps == 6
        assert np.isclose(optimizer.param_groups[0]["lr"], want["lr"][-1])
        assert int(model.inc.double_conv[1].num_batches_tracked) == 6


def unet_milesial_module(lib):
    """milesial/Pytorch-UNet's unet_parts.py: same-padding double convs, bilinear Upsample and F.pad to the
    skip's size (instead of cropping), a multiclass head."""
    nn, F = lib.nn, lib.nn.functional
    torch_ = lib

    class DoubleConv(nn.Module):
        def __init__(self, in_channels, out_channels, mid_channels=None):
            super().__init__()
            if not mid_channels:
                mid_channels = out_channels
            self.double_conv = nn.Sequential(
                nn.Conv2d(in_channels, mid_channels, kernel_size=3, padding=1, bias=False),
                nn.BatchNorm2d(mid_channels),
                nn.ReLU(inplace=True),
                nn.Conv2d(mid_channels, out_channels, kernel_size=3, padding=1, bias=False),
                nn.BatchNorm2d(out_channels),
                nn.ReLU(inplace=True),
            )

        def forward(self, x):
            return self.double_conv(x)

    class Up(nn.Module):
        def __init__(self, in_channels, out_channels):
            super().__init__()
            self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
            self.conv = DoubleConv(in_channels, out_channels, in_channels // 2)

        def forward(self, x1, x2):
            x1 = self.up(x1)
            diffY = x2.size()[2] - x1.size()[2]
            diffX = x2.size()[3] - x1.size()[3]
            x1 = F.pad(x1, [diffX // 2, diffX - diffX // 2, diffY // 2, diffY - diffY // 2])
            x = torch_.cat([x2, x1], dim=1)
            return self.conv(x)

    class UNet(nn.Module):
        def __init__(self, n_channels, n_classes):
            super().__init__()
            self.n_channels, self.n_classes = n_channels, n_classes
            self.inc = DoubleConv(n_channels, 4)
            self.down1 = nn.Sequential(nn.MaxPool2d(2), DoubleConv(4, 8))
            self.down2 = nn.Sequential(nn.MaxPool2d(2), DoubleConv(8, 16 // 2))
            self.up1 = Up(16, 8 // 2)
            self.up2 = Up(8, 4)
            self.outc = nn.Conv2d(4, n_classes, kernel_size=1)

        def forward(self, x):
            x1 = self.inc(x)
            x2 = self.down1(x1)
            x3 = self.down2(x2)
            x = self.up1(x3, x2)
            x = self.up2(x, x1)
            return self.outc(x)

    return UNet


def dice_coeff(input, target, reduce_batch_first=False, epsilon=1e-6):
    assert input.size() == target.size()
    assert input.dim() == 3 or not reduce_batch_first
    sum_dim = (-1, -2) if input.dim() == 2 or not reduce_batch_first else (-1, -2, -3)
    inter = 2 * (input * target).sum(dim=sum_dim)
    sets_sum = input.sum(dim=sum_dim) + target.sum(dim=sum_dim)
    sets_sum = sets_sum.where(sets_sum != 0, inter)  # (the Tensor.where method, as in utils/dice_score.py)
    dice = (inter + epsilon) / (sets_sum + epsilon)
    return dice.mean()


def multiclass_dice_coeff(input, target, reduce_batch_first=False, epsilon=1e-6):
    return dice_coeff(input.flatten(0, 1), target.flatten(0, 1), reduce_batch_first, epsilon)


def unet_milesial(lib, data, state, workdir):
    torch_, nn, F = lib, lib.nn, lib.nn.functional
    model = unet_milesial_module(lib)(n_channels=1, n_classes=3)
    model = model.to(memory_format=torch_.channels_last)
    state = setup(lib, {"model": model}, state)
    record = {"keys": sorted(model.state_dict())}
    optimizer = torch_.optim.RMSprop(model.parameters(), lr=1e-3, weight_decay=1e-8, momentum=0.9, foreach=True)
    scheduler = torch_.optim.lr_scheduler.ReduceLROnPlateau(optimizer, "max", patience=1)
    grad_scaler = torch_.amp.GradScaler("cpu", enabled=False)
    criterion = nn.CrossEntropyLoss() if model.n_classes > 1 else nn.BCEWithLogitsLoss()
    losses, lrs, scores = [], [], []
    for images, true_masks in zip(data["images"], data["masks"]):
        images = torch_.from_numpy(images).to(dtype=torch_.float32, memory_format=torch_.channels_last)
        true_masks = torch_.from_numpy(true_masks).to(dtype=torch_.long)
        model.train()
        with torch_.autocast("cpu", enabled=False):
            masks_pred = model(images)
            loss = criterion(masks_pred, true_masks)
            loss += 1 - multiclass_dice_coeff(
                F.softmax(masks_pred, dim=1).float(),
                F.one_hot(true_masks, model.n_classes).permute(0, 3, 1, 2).float(),
                reduce_batch_first=True)
        optimizer.zero_grad(set_to_none=True)
        grad_scaler.scale(loss).backward()
        grad_scaler.unscale_(optimizer)
        torch_.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        grad_scaler.step(optimizer)
        grad_scaler.update()
        losses.append(loss.item())
        # evaluate(): the dice of the argmax prediction, background excluded; the scheduler steps on it
        model.eval()
        with torch_.inference_mode():
            mask_pred = model(images)
            mask_true = F.one_hot(true_masks, model.n_classes).permute(0, 3, 1, 2).float()
            mask_pred = F.one_hot(mask_pred.argmax(dim=1), model.n_classes).permute(0, 3, 1, 2).float()
            val_score = multiclass_dice_coeff(mask_pred[:, 1:], mask_true[:, 1:], reduce_batch_first=False)
        scheduler.step(val_score)
        scores.append(float(val_score))
        lrs.append(optimizer.param_groups[0]["lr"])
    record.update(loss=np.array(losses), lr=np.array(lrs), val_dice=np.array(scores))
    record["channels_last_weight"] = model.inc.double_conv[0].weight.is_contiguous(memory_format=torch_.channels_last)
    record_params(record, "model", model)
    state_dict = model.state_dict()
    state_dict["mask_values"] = [0, 1, 2]  # train.py stores the mask values next to the weights
    torch_.save(state_dict, f"{workdir}/milesial_{lib.__name__}.pth")
    return record, state


def _unet_milesial_data():
    rng = np.random.default_rng(1)
    images = [rng.standard_normal((2, 1, 12, 12)).astype(np.float32) for _ in range(6)]
    masks = [np.digitize(img[:, 0], [-0.5, 0.7]) for img in images]
    return {"images": images, "masks": masks}


def test_unet_milesial_matches_torch(tmp_path):
    """Pytorch-UNet's train.py: channels_last model and images, CE + multiclass Dice (one_hot, permute),
    RMSprop(foreach, momentum), ReduceLROnPlateau('max') on the evaluation Dice, a disabled GradScaler and
    autocast, clip_grad_norm_; predict.py's loading of a checkpoint that carries 'mask_values'."""
    got, want, _ = run_both(unet_milesial, _unet_milesial_data(), str(tmp_path))
    assert got["channels_last_weight"]
    # RMSprop divides by the root of the squared-gradient average: a near-zero gradient (dead ReLUs) moves its
    # weight by ~lr whatever its last bits, so float32 rounding of the (agreeing) gradients shows as ~lr*1e-2
    assert not compare(got, want, looser={"param:": (1e-4, 1e-4)})
    for src, dst in (("torch", ember), ("ember", torch)):
        state_dict = dst.load(f"{tmp_path}/milesial_{src}.pth")
        mask_values = state_dict.pop("mask_values", [0, 1])
        model = unet_milesial_module(dst)(n_channels=1, n_classes=3)
        model.load_state_dict(state_dict)
        assert mask_values == [0, 1, 2]
        assert np.allclose(_np(model.outc.weight), want["param:model.outc.weight"], rtol=1e-4, atol=1e-6)


# ================================================================================================ 6. VAE + DCGAN


def vae_module(lib):
    nn, F = lib.nn, lib.nn.functional

    class VAE(nn.Module):
        def __init__(self, x_dim=16, h_dim=12, z_dim=3):
            super().__init__()
            self.fc1 = nn.Linear(x_dim, h_dim)
            self.fc_mu = nn.Linear(h_dim, z_dim)
            self.fc_logvar = nn.Linear(h_dim, z_dim)
            self.fc3 = nn.Linear(z_dim, h_dim)
            self.fc4 = nn.Linear(h_dim, x_dim)

        def encode(self, x):
            h = F.relu(self.fc1(x))
            return self.fc_mu(h), self.fc_logvar(h)

        def decode(self, z):
            return self.fc4(F.relu(self.fc3(z)))

    return VAE


def vae(lib, data, state, workdir):
    torch_ = lib
    D = lib.distributions
    model = vae_module(lib)()
    state = setup(lib, {"model": model}, state)
    record = {"keys": sorted(model.state_dict())}
    optimizer = torch_.optim.Adam(model.parameters(), lr=3e-3)
    losses, iwae = [], []
    for x, eps in zip(data["x"], data["eps"]):
        x, eps = torch_.tensor(x), torch_.tensor(eps)  # eps: (K, B, z)
        mu, logvar = model.encode(x)
        std = torch_.exp(0.5 * logvar)
        q = D.Normal(mu, std)
        z_own = q.rsample()
        record.setdefault("rsample_shape", list(z_own.shape))
        record.setdefault("rsample_requires_grad", z_own.requires_grad)
        z = q.loc + q.scale * eps[0]  # what rsample does, with shared noise
        logits = model.decode(z)
        rec = D.Independent(D.Bernoulli(logits=logits), 1).log_prob(x)
        prior = D.Normal(torch_.zeros_like(mu), torch_.ones_like(std))
        kl = D.kl_divergence(q, prior).sum(-1)
        loss = -(rec - kl).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        with torch_.no_grad():  # importance-weighted bound with K samples
            mu, logvar = model.encode(x)
            qz = D.Independent(D.Normal(mu, torch_.exp(0.5 * logvar)), 1)
            zs = mu + torch_.exp(0.5 * logvar) * eps  # (K, B, z)
            pz = D.Independent(D.Normal(torch_.zeros(3), torch_.ones(3)), 1)
            px = D.Bernoulli(logits=model.decode(zs)).log_prob(x.expand(eps.size(0), -1, -1)).sum(-1)
            log_w = px + pz.log_prob(zs) - qz.log_prob(zs)
            iwae.append((torch_.logsumexp(log_w, dim=0) - math.log(eps.size(0))).mean().item())
    record.update(loss=np.array(losses), iwae=np.array(iwae))
    record_params(record, "model", model)
    # distribution facts: batch/event shapes, entropy, analytic KL, means
    q = D.Independent(D.Normal(mu, torch_.exp(0.5 * logvar)), 1)
    record["shapes"] = [list(q.batch_shape), list(q.event_shape)]
    record["entropy"] = _np(q.entropy())
    b = D.Bernoulli(logits=model.decode(mu))
    record["bernoulli_mean"] = _np(b.mean)
    record["bernoulli_probs"] = _np(b.probs)
    record["bernoulli_entropy"] = _np(b.entropy())
    record["kl_indep"] = _np(D.kl_divergence(q, D.Independent(D.Normal(torch_.zeros_like(mu),
                                                                      torch_.ones_like(mu)), 1)))
    # rsample's reparameterisation gradients: d sum(z)/d loc = 1, d sum(z)/d scale = eps
    loc = torch_.zeros(4, 3, requires_grad=True)
    scale = torch_.full((4, 3), 2.0, requires_grad=True)
    zz = D.Normal(loc, scale).rsample()
    zz.sum().backward()
    record["rsample_grads_ok"] = bool(torch_.allclose(loc.grad, torch_.ones(4, 3))
                                      and torch_.allclose(scale.grad, zz.detach() / 2.0))
    return record, state


def dcgan_modules(lib, parametrization: bool):
    nn = lib.nn
    SN = nn.utils.parametrizations.spectral_norm if parametrization else nn.utils.spectral_norm

    class Generator(nn.Module):
        def __init__(self, nz=4, ngf=4):
            super().__init__()
            self.main = nn.Sequential(
                nn.ConvTranspose2d(nz, ngf * 2, 4, 1, 0, bias=False),
                nn.BatchNorm2d(ngf * 2),
                nn.ReLU(True),
                nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False),
                nn.BatchNorm2d(ngf),
                nn.ReLU(True),
                nn.ConvTranspose2d(ngf, 1, 4, 2, 1, bias=False),
                nn.Tanh(),
            )

        def forward(self, input):
            return self.main(input)

    class Discriminator(nn.Module):
        def __init__(self, ndf=4):
            super().__init__()
            self.main = nn.Sequential(
                SN(nn.Conv2d(1, ndf, 4, 2, 1, bias=False)),
                nn.LeakyReLU(0.2, inplace=True),
                SN(nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False)),
                nn.LeakyReLU(0.2, inplace=True),
                SN(nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False)),
            )

        def forward(self, input):
            return self.main(input).view(-1, 1).squeeze(1)

    return Generator, Discriminator


def weights_init(m):
    classname = m.__class__.__name__
    if classname.find("BatchNorm") != -1:
        m.weight.data.normal_(1.0, 0.02)
        m.bias.data.fill_(0)


def dcgan(lib, data, state, workdir, parametrization=False):
    torch_, nn = lib, lib.nn
    Generator, Discriminator = dcgan_modules(lib, parametrization)
    netG, netD = Generator(), Discriminator()
    netG.apply(weights_init)
    state = setup(lib, {"G": netG, "D": netD}, state)
    record = {"keys": sorted(netD.state_dict()) + sorted(netG.state_dict())}
    criterion = nn.BCEWithLogitsLoss()
    optimizerD = torch_.optim.Adam(netD.parameters(), lr=2e-4, betas=(0.5, 0.999))
    optimizerG = torch_.optim.Adam(netG.parameters(), lr=2e-4, betas=(0.5, 0.999))
    real_label, fake_label = 1.0, 0.0
    errDs, errGs, sigmas = [], [], []
    for real, noise in zip(data["real"], data["noise"]):
        real_cpu, noise = torch_.tensor(real), torch_.tensor(noise)
        netD.zero_grad()
        b_size = real_cpu.size(0)
        label = torch_.full((b_size,), real_label, dtype=torch_.float)
        output = netD(real_cpu)
        errD_real = criterion(output, label)
        errD_real.backward()
        fake = netG(noise)
        label.fill_(fake_label)
        output = netD(fake.detach())
        errD_fake = criterion(output, label)
        errD_fake.backward()
        errD = errD_real + errD_fake
        optimizerD.step()
        netG.zero_grad()
        label.fill_(real_label)
        output = netD(fake)
        errG = criterion(output, label)
        errG.backward()
        optimizerG.step()
        errDs.append(errD.item())
        errGs.append(errG.item())
        conv = netD.main[0]
        w = conv.weight.detach().reshape(conv.weight.shape[0], -1)
        sigmas.append(torch_.linalg.matrix_norm(w, ord=2).item())
    record.update(errD=np.array(errDs), errG=np.array(errGs), sigma=np.array(sigmas))
    record_params(record, "D", netD)
    record_params(record, "G", netG)
    netD.eval()
    with torch_.no_grad():
        record["eval_D"] = _np(netD(torch_.tensor(data["real"][0])))
        record["eval_weight"] = _np(netD.main[2].weight)
    torch_.save(netD.state_dict(), f"{workdir}/D_{lib.__name__}_{parametrization}.pt")
    return record, state


def _vae_data():
    rng = np.random.default_rng(0)
    return {"x": [(rng.uniform(size=(6, 16)) > 0.5).astype(np.float32) for _ in range(8)],
            "eps": [rng.standard_normal((5, 6, 3)).astype(np.float32) for _ in range(8)]}


def _dcgan_data():
    rng = np.random.default_rng(0)
    return {"real": [np.tanh(rng.standard_normal((3, 1, 16, 16))).astype(np.float32) for _ in range(5)],
            "noise": [rng.standard_normal((3, 4, 1, 1)).astype(np.float32) for _ in range(5)]}


def test_vae_matches_torch(tmp_path):
    got, want, _ = run_both(vae, _vae_data(), str(tmp_path))
    assert got["rsample_shape"] == [6, 3] and got["rsample_requires_grad"] and got["rsample_grads_ok"]
    assert not compare(got, want)


@pytest.mark.parametrize("parametrization", [False, True], ids=["utils.spectral_norm", "parametrizations"])
def test_dcgan_spectral_norm_matches_torch(tmp_path, parametrization):
    got, want, _ = run_both(dcgan, _dcgan_data(), str(tmp_path), parametrization=parametrization)
    assert not compare(got, want)
    for src, dst in (("torch", ember), ("ember", torch)):
        _, Discriminator = dcgan_modules(dst, parametrization)
        netD = Discriminator()
        netD.load_state_dict(dst.load(f"{tmp_path}/D_{src}_{parametrization}.pt"))
        netD.eval()
        with dst.no_grad():
            out = netD(dst.tensor(_dcgan_data()["real"][0]))
        assert np.allclose(_np(out), want["eval_D"], rtol=1e-4, atol=1e-5), src


# ================================================================================================ focused tests


def _warnings_of(lib, action) -> list:
    """The messages (first line) of the warnings `action(lib)` issues, with warn-once warnings made to repeat."""
    import warnings

    lib.set_warn_always(True)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            action(lib)
    finally:
        lib.set_warn_always(False)
    return [str(w.message).split(" (Triggered internally")[0].split("\n")[0] for w in caught]


def test_float_of_a_tensor_that_requires_grad_warns_like_torch():
    """`float(loss)` in a training loop (the GAT program): torch warns (once per process) for float() and
    complex() of a tensor that requires grad, not for int(), item(), format() or a detached tensor."""
    def action(lib):
        x = lib.ones(2, requires_grad=True).sum()
        int(x), x.item(), f"{x:.2f}", float(x.detach())
        float(x)
        "%f" % x  # noqa: UP031 (the old-style formatting goes through __float__)
        complex(x)

    got, want = _warnings_of(ember, action), _warnings_of(torch, action)
    assert got == want and len(want) == 3, (got, want)


def test_uint8_masks_warn_and_fail_like_torch():
    """Old-style byte masks (pytorch-crf's mask.byte()): torch.where warns, indexing warns and still selects,
    masked_scatter refuses them with torch's RuntimeError (NumPy had taken them for integer indices), a
    one-element fill through one byte mask fails as torch's masked_fill_ does, and masked_fill's message names
    the C++ type."""
    def action(lib):
        mask = lib.tensor([1, 0, 1], dtype=lib.uint8)
        x = lib.arange(3.0)
        assert lib.where(mask, x, -x).tolist() == [0.0, -1.0, 2.0]
        assert x[mask].tolist() == [0.0, 2.0]
        x[mask] = lib.tensor([5.0, 6.0])
        assert x.tolist() == [5.0, 1.0, 6.0]

    got, want = _warnings_of(ember, action), _warnings_of(torch, action)
    assert got == want and len(want) == 3, (got, want)

    def put(lib, m):
        x = lib.ones(3)
        x[m] = 0.0  # torch sends a one-element fill through one mask to masked_fill_

    for name, call in (("masked_scatter", lambda lib, m: lib.ones(3).masked_scatter(m, lib.zeros(3))),
                       ("masked_fill", lambda lib, m: lib.ones(3).masked_fill(m, 0.0)),
                       ("setitem", put),
                       ("index_put_", lambda lib, m: lib.ones(3).index_put_((m,), lib.tensor([7.0]))),
                       ("2-d", lambda lib, m: lib.ones(2, 3).__setitem__((slice(None), m), lib.tensor(1.0)))):
        messages = []
        for lib in (torch, ember):
            with pytest.raises(RuntimeError) as info:
                call(lib, lib.tensor([1, 0, 1], dtype=lib.uint8))
            messages.append(str(info.value))
        assert messages[0] == messages[1], name


def test_searchsorted_checks_sorter_and_warns_on_non_contiguous_operands_like_torch():
    """NeRF's sample_pdf passes an expanded linspace (and calls u.contiguous() because of torch's warning);
    a sorter must be int64, of the boundaries' shape and in range (NumPy took int32, wrapped -1, or failed with
    its own ValueError)."""
    def action(lib):
        cdf = lib.linspace(0.0, 1.0, 5).expand(3, 5)
        u = lib.linspace(0.0, 1.0, 12).view(4, 3).t()
        assert lib.searchsorted(cdf, u, right=True).shape == (3, 4)
        lib.bucketize(u.contiguous(), lib.linspace(0.0, 1.0, 10)[::2])
        lib.searchsorted(lib.tensor([3.0, 1.0, 2.0]), lib.tensor([1.5]), sorter=lib.tensor([0, 1, 2, 0, 1, 2])[::2])

    got, want = _warnings_of(ember, action), _warnings_of(torch, action)
    assert got == want and len(want) == 4, (got, want)
    sequence, values = [3.0, 1.0, 2.0], [1.5, 2.5]
    for sorter in ([1, 2, 0], [1, 2, 3], [1, -1, 0], [[1, 2, 0]]):
        results = []
        for lib in (torch, ember):
            try:
                results.append(lib.searchsorted(lib.tensor(sequence), lib.tensor(values),
                                                sorter=lib.tensor(sorter)).tolist())
            except RuntimeError as error:
                results.append(str(error))
        assert results[0] == results[1], sorter
    results = []
    for lib in (torch, ember):
        with pytest.raises(RuntimeError) as info:
            lib.searchsorted(lib.tensor(sequence), lib.tensor(values), sorter=lib.tensor([1, 2, 0], dtype=lib.int32))
        results.append(str(info.value))
    assert results[0] == results[1]


def _channels_last_flags(lib, build) -> dict:
    lib.manual_seed(0)
    x = lib.randn(2, 3, 8, 8).to(memory_format=lib.channels_last)
    return {name: tensor.is_contiguous(memory_format=lib.channels_last) for name, tensor in build(lib, x).items()}


def test_conv_and_max_pool_keep_channels_last_like_torch():
    """Pytorch-UNet's `model.to(memory_format=torch.channels_last)`: torch's conv, conv_transpose and max_pool
    return channels-last activations for a channels-last input or weight (ember returned NCHW-contiguous ones,
    so strides and what .view() accepts differed), and plain NCHW stays NCHW."""
    def build(lib, x):
        nn, F = lib.nn, lib.nn.functional
        plain = x.contiguous()
        conv_cl = nn.Conv2d(3, 4, 3).to(memory_format=lib.channels_last)
        values, indices = F.max_pool2d(x, 2, return_indices=True)
        y = nn.Conv2d(3, 4, 3)(x.detach().requires_grad_())
        return {"conv": y, "conv_weight_cl": conv_cl(plain), "conv_plain": nn.Conv2d(3, 4, 3)(plain),
                "grouped": nn.Conv2d(3, 3, 3, groups=3)(x), "conv_t": nn.ConvTranspose2d(3, 2, 2, 2)(x),
                "conv_t_plain": nn.ConvTranspose2d(3, 2, 2, 2)(plain), "max_pool": values, "indices": indices,
                "max_pool_plain": F.max_pool2d(plain, 2), "bn_relu": F.relu(nn.BatchNorm2d(4)(y)),
                "cat": lib.cat([y, y], 1)}

    got, want = _channels_last_flags(ember, build), _channels_last_flags(torch, build)
    assert got == want, {k: (got[k], want[k]) for k in want if got[k] != want[k]}
    assert want["conv"] and not want["conv_plain"]
    x = ember.randn(2, 3, 8, 8).to(memory_format=ember.channels_last)
    assert torch.allclose(torch.from_numpy(ember.nn.functional.max_pool2d(x, 2).numpy()),
                          torch.nn.functional.max_pool2d(torch.from_numpy(x.numpy()), 2))


def test_composite_pools_and_interpolate_keep_channels_last_like_torch():
    """avg_pool2d, the adaptive 2-d pools and interpolate are compositions in ember; torch's kernels return
    channels-last results for a channels-last input (its 3-d pools do not), so ember lays the composition's
    result out as torch's suggest_memory_format() says (nn/_functional_pool.py:keep_suggested_layout).  An
    NCHW input stays NCHW, and the values agree with torch's."""
    data = np.random.default_rng(0).standard_normal((2, 3, 8, 8)).astype(np.float32)

    def build(lib, layout):
        F = lib.nn.functional
        x = lib.tensor(data).to(memory_format=layout(lib))
        x3 = x.unsqueeze(2).expand(-1, -1, 4, -1, -1)
        x3 = x3.contiguous(memory_format=lib.channels_last_3d if layout(lib) is lib.channels_last
                           else lib.contiguous_format)
        values, indices = F.adaptive_max_pool2d(x, 3, return_indices=True)
        outputs = {"avg_pool": F.avg_pool2d(x, 2), "avg_pool_padded": F.avg_pool2d(x, 3, 2, 1),
                   "adaptive_avg": F.adaptive_avg_pool2d(x, 3), "adaptive_avg_even": F.adaptive_avg_pool2d(x, 4),
                   "adaptive_max": values, "adaptive_max_indices": indices, "lp_pool": F.lp_pool2d(x, 2, 2),
                   "avg_pool3d": F.avg_pool3d(x3, 2), "adaptive_avg3d": F.adaptive_avg_pool3d(x3, 3),
                   "trilinear": F.interpolate(x3, scale_factor=2, mode="trilinear"),
                   "nearest3d": F.interpolate(x3, size=(3, 5, 7), mode="nearest"),
                   "antialias": F.interpolate(x, size=(5, 3), mode="bilinear", antialias=True),
                   "uint8_nearest": F.interpolate((x * 40 + 100).to(lib.uint8), scale_factor=2)}
        for mode in ("nearest", "bilinear", "bicubic", "nearest-exact", "area"):
            outputs[mode] = F.interpolate(x, scale_factor=2, mode=mode)
            outputs[mode + "_down"] = F.interpolate(x, size=(5, 3), mode=mode)
        return outputs

    def flags(outputs, lib):
        return {name: t.is_contiguous(memory_format=lib.channels_last if t.ndim == 4 else lib.channels_last_3d)
                for name, t in outputs.items()}

    for layout in (lambda lib: lib.channels_last, lambda lib: lib.contiguous_format):
        mine, theirs = build(ember, layout), build(torch, layout)
        assert flags(mine, ember) == flags(theirs, torch)
        for name in mine:
            np.testing.assert_allclose(_np(mine[name]).astype(np.float64), _np(theirs[name]).astype(np.float64),
                                       rtol=1e-5, atol=1e-5, err_msg=name)


def test_bfloat16_max_pool_matches_torch():
    """A U-Net / DCGAN cast with model.to(torch.bfloat16): max_pool2d took NumPy's iinfo of ml_dtypes' bfloat16
    (a 'V' kind) and failed; now values, NaN propagation, indices and the gradient agree with torch's."""
    data = np.random.default_rng(0).standard_normal((2, 3, 7, 7)).astype(np.float32)
    data[0, 0, 0, 0] = np.nan
    results = []
    for lib in (torch, ember):
        x = lib.tensor(data).to(lib.bfloat16).requires_grad_()
        values, indices = lib.nn.functional.max_pool2d(x, 3, 2, 1, return_indices=True, ceil_mode=True)
        (values.float() * lib.arange(values.numel()).view(values.shape)).nansum().backward()
        pooled = lib.nn.MaxPool2d(2)(x.detach().to(memory_format=lib.channels_last))
        results.append({"values": _np(values.float()), "indices": _np(indices), "grad": _np(x.grad.float()),
                        "dtype": str(values.dtype).split(".")[-1], "pooled": _np(pooled.float()),
                        "channels_last": pooled.is_contiguous(memory_format=lib.channels_last)})
    assert not compare(results[1], results[0], rtol=0, atol=0)
