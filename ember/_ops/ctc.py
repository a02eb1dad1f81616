"""CTC loss as one primitive: the alpha (forward) and beta (backward) recursions of ATen's LossCTC.cpp, in log
space, vectorised over the batch and the extended-label states, looping over time.

A primitive, not a composite of ember ops: the composite read the lengths and labels into Python (one op per
time step and sample), so `ember.compile` broke the graph at every ctc_loss and recaptured for every new batch
of labels; here the lengths and labels are tensor operands the kernel reads when it runs.  The gradient is
torch's closed form, exp(log_probs) - posterior (it assumes log_probs came from log_softmax).
"""

from __future__ import annotations

import numpy as np

from .._dispatch import SAVE_INPUTS, OpDef, call


def _logsumexp3(xp, a, b, c):
    """log(e^a + e^b + e^c) as ATen writes it: shifted by the max (0 when all are -inf)."""
    m = xp.maximum(xp.maximum(a, b), c)
    m = xp.where(m == -np.inf, 0, m)
    return xp.log(xp.exp(a - m) + xp.exp(b - m) + xp.exp(c - m)) + m


def _tables(xp, log_probs, targets, input_lengths, target_lengths, blank):
    """Checks, the extended labels (N, S) and their log-probabilities (N, T, S), -inf past each sample's states."""
    T, N, _ = log_probs.shape
    il = [int(v) for v in input_lengths.reshape(-1).tolist()]
    tl = [int(v) for v in target_lengths.reshape(-1).tolist()]
    for length in il:
        if length > T:
            raise RuntimeError(f"Expected input_lengths to have value at most {T}, but got value {length} (while "
                               "checking arguments for ctc_loss_cpu)")
    if targets.ndim == 2 and tl and max(tl) > targets.shape[1]:
        raise RuntimeError(f"Expected tensor to have size at least {max(tl)} at dimension 1, but got size "
                           f"{targets.shape[1]} for argument #2 'targets' (while checking arguments for "
                           "ctc_loss_allocate_outputs)")
    if targets.ndim == 1 and sum(tl) != targets.shape[0]:  # concatenated targets: exactly the lengths' total
        raise RuntimeError(f"Expected tensor to have size {sum(tl)} at dimension 0, but got size {targets.shape[0]} "
                           "for argument #2 'targets' (while checking arguments for ctc_loss_allocate_outputs)")
    states = 2 * max(tl, default=0) + 1
    prime = np.full((N, states), blank, dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(tl)]).astype(np.int64)
    host_targets = targets.tolist() if hasattr(targets, "tolist") else targets
    for b in range(N):
        labels = host_targets[b][:tl[b]] if targets.ndim == 2 else host_targets[offsets[b]:offsets[b + 1]]
        prime[b, 1:2 * tl[b] + 1:2] = labels
    valid = np.arange(states)[None, :] < (2 * np.asarray(tl, dtype=np.int64) + 1)[:, None]
    # a label may be reached from two states back unless it repeats the label there (blanks never skip)
    skip = np.zeros((N, states), dtype=bool)
    skip[:, 2:] = prime[:, 2:] != prime[:, :-2]
    prime_x, valid_x = xp.asarray(prime), xp.asarray(valid)
    emit = xp.take_along_axis(log_probs.transpose(1, 0, 2), prime_x[:, None, :], axis=2)  # (N, T, S)
    emit = xp.where(valid_x[:, None, :], emit, -np.inf)
    return il, tl, prime_x, valid_x, xp.asarray(skip), emit


def _alpha(xp, emit, skip):
    N, T, S = emit.shape
    neg = xp.full((N, 2), -np.inf, dtype=emit.dtype)
    alpha = xp.full((N, T, S), -np.inf, dtype=emit.dtype)
    alpha[:, 0, :2] = emit[:, 0, :2]
    for t in range(1, T):
        prev = alpha[:, t - 1]
        shifted = xp.concatenate([neg, prev], axis=1)  # state s reads s - 1 and s - 2
        step, jump = shifted[:, 1:S + 1], xp.where(skip, shifted[:, :S], -np.inf)
        alpha[:, t] = _logsumexp3(xp, prev, step, jump) + emit[:, t]
    return alpha


def _nll(xp, alpha, il, tl):
    """-log p(target | input) per sample (inf when no alignment exists)."""
    out = []
    for b, (steps, length) in enumerate(zip(il, tl)):
        if steps == 0:
            out.append(0.0 if length == 0 else np.inf)
            continue
        last = alpha[b, steps - 1]
        if length == 0:
            out.append(-float(last[0]))
            continue
        l1, l2 = last[2 * length], last[2 * length - 1]
        m = max(l1, l2)
        m = 0 if m == -np.inf else m
        with np.errstate(divide="ignore"):
            out.append(-float(xp.log(xp.exp(l1 - m) + xp.exp(l2 - m)) + m))
    return out


def _ctc_impl(xp, log_probs, targets, input_lengths, target_lengths, blank, zero_infinity):
    il, tl, _, _, skip, emit = _tables(xp, log_probs, targets, input_lengths, target_lengths, blank)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        nll = xp.asarray(_nll(xp, _alpha(xp, emit, skip), il, tl), dtype=log_probs.dtype)
    if zero_infinity:
        nll = xp.where(nll == np.inf, 0, nll).astype(log_probs.dtype)
    return nll


def _ctc_backward_impl(xp, grad, log_probs, targets, input_lengths, target_lengths, blank, zero_infinity):
    T, N, C = log_probs.shape
    il, tl, prime, valid, skip, emit = _tables(xp, log_probs, targets, input_lengths, target_lengths, blank)
    S = emit.shape[2]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        alpha = _alpha(xp, emit, skip)
        nll = xp.asarray(_nll(xp, alpha, il, tl), dtype=log_probs.dtype)
        beta = xp.full((N, T, S), -np.inf, dtype=emit.dtype)
        for b, (steps, length) in enumerate(zip(il, tl)):
            if steps > 0:
                beta[b, steps - 1, 2 * length] = emit[b, steps - 1, 2 * length]
                if length > 0:
                    beta[b, steps - 1, 2 * length - 1] = emit[b, steps - 1, 2 * length - 1]
        neg = xp.full((N, 2), -np.inf, dtype=emit.dtype)
        skip_back = xp.concatenate([skip, xp.zeros((N, 2), dtype=bool)], axis=1)[:, 2:]
        last = xp.asarray(np.asarray(il, dtype=np.int64) - 1)[:, None]
        for t in range(T - 2, -1, -1):
            following = beta[:, t + 1]
            shifted = xp.concatenate([following, neg], axis=1)  # state s reads s + 1 and s + 2
            step, jump = shifted[:, 1:S + 1], xp.where(skip_back, shifted[:, 2:], -np.inf)
            beta[:, t] = xp.where(t < last, _logsumexp3(xp, following, step, jump) + emit[:, t], beta[:, t])
        # log of the summed alpha * beta over the states emitting each class
        both = alpha + beta
        shift = both.max(axis=2, keepdims=True)
        shift = xp.where(shift == -np.inf, 0, shift)
        onehot = xp.zeros((N, S, C), dtype=emit.dtype)
        onehot[xp.arange(N)[:, None], xp.arange(S)[None, :], prime] = valid
        lcab = xp.log(xp.einsum("nts,nsc->ntc", xp.exp(both - shift), onehot)) + shift
        lp = log_probs.transpose(1, 0, 2)
        result = (xp.exp(lp) - xp.exp(lcab + nll[:, None, None] - lp)) * grad.reshape(-1)[:, None, None]
    inside = xp.arange(T)[None, :, None] < xp.asarray(np.asarray(il, dtype=np.int64))[:, None, None]
    if zero_infinity:
        inside = inside & (nll != np.inf)[:, None, None]
    return xp.where(inside, result, 0).astype(log_probs.dtype).transpose(1, 0, 2)


def _ctc_backward(ctx, g):
    log_probs, targets, input_lengths, target_lengths = ctx.inputs
    grad = call(CTC_LOSS_BACKWARD, (g, log_probs, targets, input_lengths, target_lengths), ctx.params)
    return grad, None, None, None


def _first_float(args, params):
    return None, args[0]._dtype


CTC_LOSS = OpDef("ctc_loss", _ctc_impl, _ctc_backward, dtype_rule=_first_float, saves=SAVE_INPUTS,
                 meta=lambda args, params: (args[0].shape[1],))
CTC_LOSS_BACKWARD = OpDef("ctc_loss_backward", _ctc_backward_impl, None,
                          dtype_rule=lambda args, params: (None, args[1]._dtype),
                          meta=lambda args, params: tuple(args[1].shape))
