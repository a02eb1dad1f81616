"""Round 23d's real programs, each written once against a library `lib` (torch or ember) the way its original is,
run under both with torch's initial weights and compared:

1. SimCLR's NT-Xent step: two views (torch.flip, additive noise), F.normalize, a similarity matmul / temperature,
   the diagonal masked with torch.eye(...).bool() and masked_fill(-inf), cross_entropy over the positives, SGD.
2. knowledge distillation: a teacher in eval under torch.no_grad, a student trained with
   F.kl_div(log_softmax(s/T), softmax(t/T), reduction="batchmean") * T*T plus label-smoothed cross-entropy.
3. a mixture-of-experts layer: router logits, topk(k=2), softmax over the top-k, index_add_ / scatter_add to
   combine the experts, a load-balancing loss with one_hot and mean, bincount.
4. MAML: torch.func.functional_call with an inner loop of autograd.grad(create_graph=True), a second-order outer
   update with Adam.
5. neural style transfer: a tiny conv feature extractor, gram matrices through bmm, content / style MSE, the
   image optimised by LBFGS with a closure and clamp_ under no_grad.
6. a TCN forecaster: dilated Conv1d with causal left padding via F.pad, parametrizations.weight_norm, residual
   connections, GELU, AdamW with CosineAnnealingWarmRestarts.

Randomness the two libraries cannot share is drawn once with NumPy and passed in.  Then the focused tests of what
the programs found.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import ember  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from _records import _np, compare, record_params, run_both, setup  # noqa: E402, F401

# ================================================================================================ 1. SimCLR


def simclr_modules(lib):
    nn = lib.nn

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                                          nn.AdaptiveAvgPool2d(1), nn.Flatten())
            self.projector = nn.Sequential(nn.Linear(8, 16), nn.ReLU(inplace=True), nn.Linear(16, 8))

        def forward(self, x):
            return self.projector(self.backbone(x))

    return Encoder


def info_nce_loss(lib, features, batch_size, n_views=2, temperature=0.5):
    # sthalles/SimCLR's info_nce_loss
    F = lib.nn.functional
    labels = lib.cat([lib.arange(batch_size) for _ in range(n_views)], dim=0)
    labels = (labels.unsqueeze(0) == labels.unsqueeze(1)).float()
    features = F.normalize(features, dim=1)
    similarity_matrix = lib.matmul(features, features.T)
    mask = lib.eye(labels.shape[0], dtype=lib.bool)
    labels = labels[~mask].view(labels.shape[0], -1)
    similarity_matrix = similarity_matrix[~mask].view(similarity_matrix.shape[0], -1)
    positives = similarity_matrix[labels.bool()].view(labels.shape[0], -1)
    negatives = similarity_matrix[~labels.bool()].view(similarity_matrix.shape[0], -1)
    logits = lib.cat([positives, negatives], dim=1)
    labels = lib.zeros(logits.shape[0], dtype=lib.long)
    return logits / temperature, labels


def nt_xent(lib, z1, z2, temperature=0.5):
    # the masked_fill(-inf) formulation (Spijkervet/SimCLR-style)
    F = lib.nn.functional
    z = F.normalize(lib.cat([z1, z2], dim=0), dim=-1)
    n = z1.shape[0]
    sim = z @ z.t() / temperature
    mask = lib.eye(2 * n, device=z.device).bool()
    sim = sim.masked_fill(mask, float("-inf"))
    targets = lib.cat([lib.arange(n, 2 * n), lib.arange(0, n)])
    return F.cross_entropy(sim, targets), sim


def simclr(lib, data, state):
    model = simclr_modules(lib)()
    state = setup(lib, {"model": model}, state)
    opt = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    record, losses, losses2 = {}, [], []
    for step, (x, noise1, noise2) in enumerate(data):
        x = lib.tensor(x)
        v1 = lib.flip(x, dims=[3]) + lib.tensor(noise1)
        v2 = x.flip(2, 3) + lib.tensor(noise2)
        z1, z2 = model(v1), model(v2)
        loss, sim = nt_xent(lib, z1, z2)
        logits, labels = info_nce_loss(lib, lib.cat([z1, z2]), x.shape[0])
        loss2 = lib.nn.CrossEntropyLoss()(logits, labels)
        opt.zero_grad()
        (loss + 0.5 * loss2).backward()
        opt.step()
        losses.append(loss.item())
        losses2.append(loss2.item())
        if step == 0:
            record["sim"] = _np(sim)
            record["logits"] = _np(logits)
            top1 = (logits.argmax(1) == labels).float().mean() * 100
            record["top1"] = top1.item()
    record["loss"] = np.array(losses)
    record["loss2"] = np.array(losses2)
    record_params(record, "model", model)
    return record, state


def _simclr_data():
    rng = np.random.default_rng(1)
    return [(rng.standard_normal((4, 3, 6, 6)).astype(np.float32),
             0.1 * rng.standard_normal((4, 3, 6, 6)).astype(np.float32),
             0.1 * rng.standard_normal((4, 3, 6, 6)).astype(np.float32)) for _ in range(5)]


def test_simclr_matches_torch():
    got, want, _ = run_both(simclr, _simclr_data())
    assert not compare(got, want)


# ================================================================================================ 2. distillation


def kd_modules(lib):
    nn = lib.nn

    def mlp(hidden, dropout):
        return nn.Sequential(nn.Linear(10, hidden), nn.BatchNorm1d(hidden), nn.ReLU(), nn.Dropout(dropout),
                             nn.Linear(hidden, 5))

    return mlp(32, 0.5), mlp(8, 0.0)


def distill(lib, data, state, T=4.0, alpha=0.7):
    F = lib.nn.functional
    teacher, student = kd_modules(lib)
    state = setup(lib, {"teacher": teacher, "student": student}, state)
    teacher.eval()
    student.train()
    opt = lib.optim.SGD(student.parameters(), lr=0.05, momentum=0.9, nesterov=True)
    ce = lib.nn.CrossEntropyLoss(label_smoothing=0.1)
    record, losses = {}, []
    for x, y in data:
        x, y = lib.tensor(x), lib.tensor(y)
        with lib.no_grad():
            t_logits = teacher(x)
        s_logits = student(x)
        soft = F.kl_div(F.log_softmax(s_logits / T, dim=1), F.softmax(t_logits / T, dim=1),
                        reduction="batchmean") * T * T
        log_target = F.kl_div(F.log_softmax(s_logits / T, dim=-1), F.log_softmax(t_logits / T, dim=-1),
                              reduction="batchmean", log_target=True)
        hard = ce(s_logits, y)
        hard2 = F.cross_entropy(s_logits, y, label_smoothing=0.2, reduction="sum")
        loss = alpha * soft + (1 - alpha) * hard
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append([loss.item(), soft.item(), hard.item(), log_target.item(), hard2.item()])
        record["t_requires_grad"] = t_logits.requires_grad
    record["loss"] = np.array(losses)
    record_params(record, "student", student)
    with lib.no_grad():
        x, y = lib.tensor(data[0][0]), lib.tensor(data[0][1])
        record["acc"] = (student(x).argmax(dim=1) == y).sum().item()
        record["kl_none"] = _np(lib.nn.KLDivLoss(reduction="none")(F.log_softmax(student(x), 1),
                                                                   F.softmax(teacher(x), 1)))
    return record, state


def _kd_data():
    rng = np.random.default_rng(2)
    return [(rng.standard_normal((6, 10)).astype(np.float32), rng.integers(0, 5, 6)) for _ in range(5)]


def test_distillation_matches_torch():
    got, want, _ = run_both(distill, _kd_data())
    assert not compare(got, want)


# ================================================================================================ 3. MoE


def moe_module(lib):
    nn, F = lib.nn, lib.nn.functional

    class Expert(nn.Module):
        def __init__(self, d, h):
            super().__init__()
            self.w1 = nn.Linear(d, h)
            self.w2 = nn.Linear(h, d)

        def forward(self, x):
            return self.w2(F.silu(self.w1(x)))

    class MoE(nn.Module):
        def __init__(self, d=8, h=16, n_experts=4, k=2):
            super().__init__()
            self.router = nn.Linear(d, n_experts, bias=False)
            self.experts = nn.ModuleList([Expert(d, h) for _ in range(n_experts)])
            self.k, self.n = k, n_experts

        def forward(self, x):
            B, S, D = x.shape
            x = x.reshape(-1, D)
            logits = self.router(x)
            probs = F.softmax(logits, dim=-1)
            top_vals, top_idx = lib.topk(logits, self.k, dim=-1)
            weights = F.softmax(top_vals, dim=-1, dtype=lib.float32)
            out = lib.zeros_like(x)
            flat_idx = top_idx.flatten()
            counts = lib.bincount(flat_idx, minlength=self.n)
            for e, expert in enumerate(self.experts):
                token, slot = lib.where(top_idx == e)
                if token.numel() == 0:
                    continue
                y = expert(x[token]) * weights[token, slot].unsqueeze(-1)
                out.index_add_(0, token, y)
            # the same combination through scatter_add
            out2 = lib.zeros_like(x)
            for e, expert in enumerate(self.experts):
                sel = (top_idx == e).nonzero(as_tuple=False)
                if sel.shape[0] == 0:
                    continue
                y = expert(x[sel[:, 0]]) * weights[sel[:, 0], sel[:, 1]][:, None]
                out2 = out2.scatter_add(0, sel[:, 0:1].expand(-1, D), y)
            # Switch-style load balancing: fraction of tokens per expert times mean router probability
            one_hot = F.one_hot(top_idx[:, 0], num_classes=self.n).float()
            tokens_per_expert = one_hot.mean(dim=0)
            prob_per_expert = probs.mean(dim=0)
            aux = self.n * (tokens_per_expert * prob_per_expert).sum()
            z_loss = lib.logsumexp(logits, dim=-1).pow(2).mean()
            mask2 = F.one_hot(top_idx, self.n).sum(dim=1)
            return out.view(B, S, D), out2.view(B, S, D), aux, z_loss, counts, mask2

    return MoE


def moe(lib, data, state, router_init="default"):
    model = moe_module(lib)()
    if router_init == "zeros":
        # zero-initialised routers (Switch / ST-MoE practice): every logit ties at the first step
        lib.nn.init.zeros_(model.router.weight)
    state = setup(lib, {"model": model}, state)
    opt = lib.optim.Adam(model.parameters(), lr=1e-2)
    record, losses = {}, []
    for step, (x, target) in enumerate(data):
        x, target = lib.tensor(x), lib.tensor(target)
        out, out2, aux, z_loss, counts, mask2 = model(x)
        loss = lib.nn.functional.mse_loss(out, target) + 0.01 * aux + 1e-3 * z_loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append([loss.item(), aux.item(), z_loss.item()])
        record[f"counts{step}"] = counts.tolist()
        record[f"counts_dtype{step}"] = str(counts.dtype).split(".")[-1]
        record[f"out2_{step}"] = _np(out2)
        record[f"mask2_{step}"] = _np(mask2)
        record[f"mask2_dtype{step}"] = str(mask2.dtype).split(".")[-1]
        record[f"unsorted{step}"] = _np(lib.topk(model.router(x.view(-1, 8)), 3, sorted=False).indices)
    record["loss"] = np.array(losses)
    record_params(record, "model", model)
    return record, state


def _moe_data():
    rng = np.random.default_rng(3)
    return [(rng.standard_normal((2, 5, 8)).astype(np.float32), rng.standard_normal((2, 5, 8)).astype(np.float32))
            for _ in range(5)]


@pytest.mark.parametrize("router_init", ["default", "zeros"])
def test_moe_matches_torch(router_init):
    """topk routing, index_add_ / scatter_add combination, one_hot load balancing, bincount; a zero-initialised
    router makes every first-step logit tie, so the experts chosen are torch's topk kernel's among equals."""
    got, want, _ = run_both(moe, _moe_data(), router_init=router_init)
    assert not compare(got, want)


# ================================================================================================ 4. MAML


def maml(lib, data, state, inner_steps=2, inner_lr=0.4):
    nn, F = lib.nn, lib.nn.functional
    from importlib import import_module
    functional_call = import_module(f"{lib.__name__}.func").functional_call
    model = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 1))
    state = setup(lib, {"model": model}, state)
    meta_opt = lib.optim.Adam(model.parameters(), lr=1e-2)
    record, losses = {}, []
    for tasks in data:
        meta_opt.zero_grad()
        outer = 0.0
        inner_record = []
        for xs, ys, xq, yq in tasks:
            xs, ys, xq, yq = (lib.tensor(a) for a in (xs, ys, xq, yq))
            params = dict(model.named_parameters())
            for _ in range(inner_steps):
                loss = F.mse_loss(functional_call(model, params, (xs,)), ys)
                grads = lib.autograd.grad(loss, params.values(), create_graph=True)
                params = {name: p - inner_lr * g for (name, p), g in zip(params.items(), grads)}
                inner_record.append(loss.item())
            q_loss = F.mse_loss(functional_call(model, params, xq), yq)
            outer = outer + q_loss
        outer = outer / len(tasks)
        outer.backward()
        record.setdefault("grad0", _np(model[0].weight.grad))
        meta_opt.step()
        losses.append([outer.item()] + inner_record)
    record["loss"] = np.array(losses)
    record_params(record, "model", model)
    # a first-order variant through torch.func.grad on the functional form
    func = __import__(f"{lib.__name__}.func", fromlist=["grad"])
    params = {k: v.detach() for k, v in model.named_parameters()}
    xs, ys = lib.tensor(data[0][0][0]), lib.tensor(data[0][0][1])

    def loss_fn(p):
        return F.mse_loss(func.functional_call(model, p, (xs,)), ys)

    g = func.grad(loss_fn)(params)
    record["func_grad"] = _np(g["2.weight"])
    xs_all = lib.tensor(np.stack([t[0] for t in data[0]]))
    ys_all = lib.tensor(np.stack([t[1] for t in data[0]]))

    def task_grad(x, y):
        return func.grad(lambda p: F.mse_loss(func.functional_call(model, p, (x,)), y))(params)

    record["vmap_grad"] = _np(func.vmap(task_grad)(xs_all, ys_all)["0.weight"])
    return record, state


def _maml_data():
    rng = np.random.default_rng(4)
    out = []
    for _ in range(4):
        tasks = []
        for _ in range(3):
            amp, phase = rng.uniform(0.1, 5.0), rng.uniform(0, np.pi)
            xs = rng.uniform(-5, 5, (5, 1)).astype(np.float32)
            xq = rng.uniform(-5, 5, (5, 1)).astype(np.float32)
            tasks.append((xs, (amp * np.sin(xs + phase)).astype(np.float32), xq,
                          (amp * np.sin(xq + phase)).astype(np.float32)))
        out.append(tasks)
    return out


def test_maml_matches_torch():
    got, want, _ = run_both(maml, _maml_data())
    assert not compare(got, want, rtol=2e-4, atol=2e-5)


# ================================================================================================ 5. style transfer


def style_modules(lib):
    nn = lib.nn
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Conv2d(8, 16, 3, padding=1), nn.ReLU())


def gram_matrix(lib, x):
    b, c, h, w = x.size()
    f = x.view(b, c, h * w)
    return lib.bmm(f, f.transpose(1, 2)).div(c * h * w)


def style_transfer(lib, data, state, line_search=None):
    F = lib.nn.functional
    cnn = style_modules(lib)
    state = setup(lib, {"cnn": cnn}, state)
    cnn.eval()
    for p in cnn.parameters():
        p.requires_grad_(False)
    content, style = lib.tensor(data["content"]), lib.tensor(data["style"])
    mean = lib.tensor([0.485, 0.456, 0.406]).view(-1, 1, 1)
    std = lib.tensor([0.229, 0.224, 0.225]).view(-1, 1, 1)

    def features(img):
        x = (img - mean) / std
        feats = []
        for i, layer in enumerate(cnn):
            x = layer(x)
            if i in (1, 3, 6):
                feats.append(x)
        return feats

    content_target = features(content)[1].detach()
    style_targets = [gram_matrix(lib, f).detach() for f in features(style)]
    input_img = content.clone().requires_grad_(True)
    optimizer = lib.optim.LBFGS([input_img], lr=1, max_iter=4, history_size=10, line_search_fn=line_search)
    record, losses = {}, []
    for _ in range(3):
        def closure():
            with lib.no_grad():
                input_img.clamp_(0, 1)
            optimizer.zero_grad()
            feats = features(input_img)
            style_score = sum(F.mse_loss(gram_matrix(lib, f), t) for f, t in zip(feats, style_targets))
            content_score = F.mse_loss(feats[1], content_target)
            loss = 1e4 * style_score + content_score
            loss.backward()
            losses.append([style_score.item(), content_score.item()])
            return loss

        ret = optimizer.step(closure)
        losses.append([float(ret), 0.0])
    with lib.no_grad():
        input_img.clamp_(0, 1)
    record["loss"] = np.array(losses)
    record["image"] = _np(input_img)
    record["grad_none_after"] = cnn[0].weight.grad is None
    return record, state


def _style_data():
    rng = np.random.default_rng(5)
    return {"content": rng.uniform(0, 1, (1, 3, 8, 8)).astype(np.float32),
            "style": rng.uniform(0, 1, (1, 3, 8, 8)).astype(np.float32)}


@pytest.mark.parametrize("line_search", [None, "strong_wolfe"])
def test_style_transfer_matches_torch(line_search):
    got, want, _ = run_both(style_transfer, _style_data(), line_search=line_search)
    assert not compare(got, want, rtol=1e-3, atol=1e-4)


# ================================================================================================ 6. TCN


def tcn_module(lib, old_weight_norm=False):
    nn, F = lib.nn, lib.nn.functional
    # locuslab/TCN uses the old hook-based nn.utils.weight_norm; newer ports the parametrization
    weight_norm = lib.nn.utils.weight_norm if old_weight_norm else lib.nn.utils.parametrizations.weight_norm

    class CausalConv1d(nn.Module):
        def __init__(self, cin, cout, k, dilation):
            super().__init__()
            self.pad = (k - 1) * dilation
            self.conv = weight_norm(nn.Conv1d(cin, cout, k, dilation=dilation))

        def forward(self, x):
            return self.conv(F.pad(x, (self.pad, 0)))

    class TemporalBlock(nn.Module):
        def __init__(self, cin, cout, k, dilation):
            super().__init__()
            self.conv1 = CausalConv1d(cin, cout, k, dilation)
            self.conv2 = CausalConv1d(cout, cout, k, dilation)
            self.act = nn.GELU()
            self.act2 = nn.GELU(approximate="tanh")
            self.downsample = nn.Conv1d(cin, cout, 1) if cin != cout else None

        def forward(self, x):
            out = self.act(self.conv1(x))
            out = self.act2(self.conv2(out))
            res = x if self.downsample is None else self.downsample(x)
            return F.gelu(out + res)

    class TCN(nn.Module):
        def __init__(self):
            super().__init__()
            layers, cin = [], 2
            for i, c in enumerate([6, 6, 6]):
                layers.append(TemporalBlock(cin, c, 3, 2 ** i))
                cin = c
            self.network = nn.Sequential(*layers)
            self.head = nn.Linear(6, 3)

        def forward(self, x):
            y = self.network(x.transpose(1, 2))
            return self.head(y[:, :, -1])

    return TCN


def tcn(lib, data, state, old_weight_norm=False):
    model = tcn_module(lib, old_weight_norm)()
    state = setup(lib, {"model": model}, state)
    opt = lib.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.05)
    sched = lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=2, eta_min=1e-4)
    record, losses, lrs = {"keys": sorted(model.state_dict())}, [], []
    for i, (x, y) in enumerate(data):
        x, y = lib.tensor(x), lib.tensor(y)
        pred = model(x)
        loss = lib.nn.functional.smooth_l1_loss(pred, y)
        opt.zero_grad()
        loss.backward()
        lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step(i + 0.5) if i == 3 else sched.step()
        losses.append(loss.item())
        lrs.append(sched.get_last_lr()[0])
    record["loss"] = np.array(losses)
    record["lr"] = np.array(lrs)
    record_params(record, "model", model)
    record["weight"] = _np(model.network[0].conv1.conv.weight)
    if old_weight_norm:
        lib.nn.utils.remove_weight_norm(model.network[0].conv1.conv)
    else:
        lib.nn.utils.parametrize.remove_parametrizations(model.network[0].conv1.conv, "weight")
    record["keys_removed"] = sorted(model.state_dict())
    record["weight_removed"] = _np(model.network[0].conv1.conv.weight)
    # causality: a change at the last time step leaves earlier outputs alone
    with lib.no_grad():
        x = lib.tensor(data[0][0])
        a = model.network(x.transpose(1, 2))
        x2 = x.clone()
        x2[:, -1] += 1.0
        b = model.network(x2.transpose(1, 2))
        record["causal"] = bool(lib.allclose(a[:, :, :-1], b[:, :, :-1]))
    record["sched_state"] = {k: v for k, v in sched.state_dict().items() if k != "_get_lr_called_within_step"}
    record["sched_state"] = sorted(record["sched_state"])
    return record, state


def _tcn_data():
    rng = np.random.default_rng(6)
    return [(rng.standard_normal((4, 12, 2)).astype(np.float32), rng.standard_normal((4, 3)).astype(np.float32))
            for _ in range(6)]


@pytest.mark.parametrize("old_weight_norm", [False, True], ids=["parametrization", "hook"])
def test_tcn_matches_torch(old_weight_norm):
    got, want, _ = run_both(tcn, _tcn_data(), old_weight_norm=old_weight_norm)
    assert not compare(got, want)
    assert want["causal"]


# ================================================================================================ focused tests


def test_autograd_grad_takes_any_iterable_like_torch():
    """MAML's `torch.autograd.grad(loss, params.values(), create_graph=True)`: torch takes any iterable of
    tensors (a dict view, a generator) for inputs and outputs; ember took only sequences and failed on the view."""
    results = []
    for lib in (torch, ember):
        params = {"a": lib.tensor([1.0, 2.0], requires_grad=True), "b": lib.tensor(3.0, requires_grad=True)}
        loss = (params["a"] ** 2).sum() * params["b"]
        grads = lib.autograd.grad(loss, params.values(), create_graph=True)
        second = lib.autograd.grad(grads[0].sum(), (p for p in params.values()), retain_graph=True)
        both = lib.autograd.grad((x.sum() for x in grads), list(params.values()))
        results.append([_np(g) for g in (*grads, *second, *both)])
    assert len(results[0]) == len(results[1]) == 6
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b)


def _warning_messages(lib, action):
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lib.set_warn_always(True)
        try:
            action(lib)
        finally:
            lib.set_warn_always(False)
    return [str(w.message).split(" (Triggered internally")[0] for w in caught]


def test_float_of_requires_grad_tensor_under_no_grad_does_not_warn_like_torch():
    """LBFGS's step runs under no_grad and calls float() on the closure's loss: torch does not warn there (its
    check includes grad mode), ember warned at every step."""
    def action(lib):
        x = lib.ones(2, requires_grad=True).sum()
        with lib.no_grad():
            float(x)
        with lib.inference_mode():
            float(x)
        float(x)
        p = lib.tensor([1.0, 2.0], requires_grad=True)
        opt = lib.optim.LBFGS([p], max_iter=3)

        def closure():
            opt.zero_grad()
            loss = (p ** 2).sum()
            loss.backward()
            return loss

        opt.step(closure)

    got, want = _warning_messages(ember, action), _warning_messages(torch, action)
    assert got == want and len(want) == 1, (got, want)


def test_topk_among_ties_and_unsorted_match_torch():
    """Which of equal values topk returns, and the order of sorted=False, are torch's CPU kernel's
    (std::nth_element then std::sort of the first k - 1, or std::partial_sort when k * 64 <= n); ember used a
    stable order, so a zero-initialised MoE router picked experts 0, 1 where torch picks 2, 3."""
    rng = np.random.default_rng(0)
    cases = [(np.zeros((3, 4), np.float32), 2, -1), (np.zeros(10, np.float32), 3, 0),
             (rng.integers(0, 3, (5, 17)).astype(np.float32), 4, 1), (rng.integers(0, 3, (300,)), 3, 0),
             (rng.integers(0, 2, (40, 3)).astype(np.float64), 7, 0), (rng.standard_normal((4, 9)), 5, 1)]
    nan_row = rng.integers(0, 3, (3, 33)).astype(np.float32)
    nan_row[:, ::5] = np.nan
    cases.append((nan_row, 6, 1))
    for data, k, dim in cases:
        for largest in (True, False):
            for sorted_ in (True, False):
                out = []
                for lib in (torch, ember):
                    x = lib.tensor(data, requires_grad=data.dtype.kind == "f")
                    values, indices = lib.topk(x, k, dim=dim, largest=largest, sorted=sorted_)
                    grad = None
                    if x.requires_grad:
                        (values.nan_to_num() * lib.arange(1.0, values.numel() + 1).view(values.shape)).sum().backward()
                        grad = _np(x.grad)
                    out.append((_np(values), _np(indices), grad))
                (tv, ti, tg), (ev, ei, eg) = out
                assert np.array_equal(ti, ei), (data.shape, k, dim, largest, sorted_, ti, ei)
                np.testing.assert_array_equal(tv, ev)
                if tg is not None:
                    np.testing.assert_array_equal(tg, eg)
    for dtype in ("float16", "bfloat16"):
        idx = [lib.topk(lib.zeros(2, 6, dtype=getattr(lib, dtype)), 3).indices.tolist() for lib in (torch, ember)]
        assert idx[0] == idx[1], dtype


def test_unstable_sort_orders_ties_like_torch():
    """torch.sort / argsort with the default stable=False are std::sort on CPU: stable up to 16 elements
    (insertion sort), introsort's order among equal values beyond; a 1-d ascending integer sort of >= 32768
    elements is a (stable) radix sort.  ember was always stable, so argsort of labels (grouping, sampling
    by class) gave other indices for slices longer than 16."""
    rng = np.random.default_rng(1)
    nan_data = rng.integers(0, 3, (2, 50)).astype(np.float32)
    nan_data[:, ::7] = np.nan
    cases = [rng.integers(0, 3, (3, 40)).astype(np.float32), rng.integers(0, 4, (100,)), nan_data,
             rng.integers(0, 2, (20, 3)).astype(np.float64), rng.integers(0, 5, 40000), rng.integers(0, 5, 20000)]
    for data in cases:
        for descending in (False, True):
            for dim in range(data.ndim):
                for stable in (False, True):
                    out = [lib.sort(lib.tensor(data), dim=dim, descending=descending, stable=stable)
                           for lib in (torch, ember)]
                    np.testing.assert_array_equal(_np(out[0].indices), _np(out[1].indices))
                    np.testing.assert_array_equal(_np(out[0].values), _np(out[1].values))
            args = [lib.tensor(data).argsort(dim=-1, descending=descending) for lib in (torch, ember)]
            np.testing.assert_array_equal(_np(args[0]), _np(args[1]))


def test_kthvalue_and_mode_indices_among_ties_match_torch():
    """kthvalue's index among equal values is torch's quick-select's (Sedgewick's partition), mode's the last of
    the mode's run after std::sort with a plain `<` (nan rows included); ember picked from a stable order."""
    rng = np.random.default_rng(2)
    with_nan = rng.integers(0, 3, (3, 25)).astype(np.float32)
    with_nan[:, ::4] = np.nan
    for data in (rng.integers(0, 3, (4, 30)).astype(np.float32), rng.integers(0, 4, (5, 12)), with_nan,
                 rng.integers(0, 2, (40, 2)).astype(np.float64)):
        for dim in range(2):
            got, want = ({f"kth{k}": _np(lib.kthvalue(lib.tensor(data), k, dim).indices)
                          for k in (1, 2, data.shape[dim] // 2 + 1, data.shape[dim])}
                         | {"mode": _np(lib.mode(lib.tensor(data), dim).indices),
                            "mode_values": _np(lib.mode(lib.tensor(data), dim).values)} for lib in (ember, torch))
            assert not compare(got, want, rtol=0, atol=0), (data.shape, dim)
