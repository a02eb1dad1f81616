"""What the real-program tests record and compare (rounds 23a-d): parameters and buffers as NumPy, torch's
initial weights loaded into both libraries, and a comparison that lists every mismatch with its error."""

from __future__ import annotations

import numpy as np


def _np(t):
    """A tensor of either library (or a number) as a NumPy copy: dense, bfloat16 widened to float32."""
    if hasattr(t, "detach"):
        t = t.detach()
        if str(t.dtype).endswith("bfloat16"):
            t = t.float()
        if getattr(t, "is_sparse", False):
            t = t.to_dense()
        return t.cpu().numpy().copy()
    return np.array(t, copy=True)


def setup(lib, modules: dict, state):
    """Load `state` (torch's initial weights as NumPy) into the modules, or return their own initial state."""
    if state is None:
        return {name: {k: _np(v) for k, v in m.state_dict().items()} for name, m in modules.items()}
    for name, module in modules.items():
        module.load_state_dict({k: lib.tensor(v) for k, v in state[name].items()})
    return state


def record_params(record: dict, prefix: str, module) -> None:
    for name, p in module.named_parameters():
        record[f"param:{prefix}.{name}"] = _np(p)
    for name, b in module.named_buffers():
        record[f"buffer:{prefix}.{name}"] = _np(b)


def compare(got: dict, want: dict, rtol: float = 1e-4, atol: float = 1e-5, looser: dict | None = None) -> list:
    """Every mismatching record with its largest error; empty when all agree.  Strings, bools, ints and
    sequences compare exactly; `looser`: key substring -> (rtol, atol) for entries rounding moves further."""
    problems = [f"keys differ: {sorted(set(got) ^ set(want))}"] if set(got) != set(want) else []
    for key in sorted(set(got) & set(want)):
        a, b = got[key], want[key]
        if isinstance(b, (str, bool, list, tuple, int)) and not isinstance(b, np.ndarray):
            if a != b:
                problems.append(f"{key}: {a!r} vs {b!r}")
            continue
        r, t = rtol, atol
        for part, tolerance in (looser or {}).items():
            if part in key:
                r, t = tolerance
        a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        if a.shape != b.shape:
            problems.append(f"{key}: shape {a.shape} vs {b.shape}")
        elif not np.allclose(a, b, rtol=r, atol=t, equal_nan=True):
            problems.append(f"{key}: max abs err {np.abs(a - b).max():.3g} (scale {np.abs(b).max():.3g})")
    return problems


def run_both(program, data, *extra, **kwargs):
    """`program(lib, data, state, *extra, **kwargs)` in torch, then in ember from the state torch's run left
    (its initial weights), each after manual_seed(0): (ember's record, torch's record, that state)."""
    import torch

    import ember

    torch.manual_seed(0)
    want, state = program(torch, data, None, *extra, **kwargs)
    ember.manual_seed(0)
    got, _ = program(ember, data, state, *extra, **kwargs)
    return got, want, state
