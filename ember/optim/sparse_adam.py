"""SparseAdam: Adam masked to the entries a sparse gradient holds, as torch.optim.SparseAdam.

torch's SparseAdam takes only sparse-layout gradients (Embedding(sparse=True)'s, see
ember/_ops/sparse_ops.py) and rejects dense ones ("SparseAdam does not support dense gradients, please
consider Adam instead"); Adam is the optimizer for dense gradients.  `_masked_update` is torch's update on
the coalesced gradient given as (indices, values).
"""

from __future__ import annotations

import math

from .. import zeros_like
from .._tensor import Tensor
from .optimizer import Optimizer, to_scalar, value_of

__all__ = ["SparseAdam"]


def _masked_update(param, exp_avg, exp_avg_sq, indices, values, step, *, lr, beta1, beta2, eps) -> None:
    """torch's sparse_adam for one param: `indices` (sparse_dim x nnz, unique) and `values` (nnz x dense dims)
    of the coalesced gradient; the moments and the param change at those entries only."""
    if values.numel() == 0:
        return
    index = tuple(indices)
    old_exp_avg, old_exp_avg_sq = exp_avg[index], exp_avg_sq[index]
    exp_avg_update = values.sub(old_exp_avg).mul_(1 - beta1)
    exp_avg_sq_update = values.pow(2).sub_(old_exp_avg_sq).mul_(1 - beta2)
    exp_avg[index] = old_exp_avg + exp_avg_update
    exp_avg_sq[index] = old_exp_avg_sq + exp_avg_sq_update
    numer = exp_avg_update.add_(old_exp_avg)
    denom = exp_avg_sq_update.add_(old_exp_avg_sq).sqrt_().add_(eps)
    step_size = value_of(lr * math.sqrt(1 - beta2**step) / (1 - beta1**step))
    param[index] = param[index] + numer.div_(denom).mul_(-step_size)


class SparseAdam(Optimizer):
    r"""Adam for sparse gradients, as torch.optim.SparseAdam; a dense gradient raises torch's error.

    Args:
        lr (float, Tensor): learning rate (default: 1e-3).
        betas (tuple[float, float]): coefficients of the running averages of the gradient and its square
            (default: (0.9, 0.999)).
        eps (float): added to the denominator (default: 1e-8).
        maximize (bool): maximize the objective (default: False).
    """

    _scalar_state_keys = ()  # torch keeps SparseAdam's 'step' a plain int

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        defaults = {"lr": lr, "betas": betas, "eps": eps, "maximize": maximize}
        super().__init__(params, defaults)
        sparse_params, complex_params = [], []
        for index, group in enumerate(self.param_groups):
            for d_index, param in enumerate(group["params"]):
                if param.is_sparse:
                    sparse_params.append([index, d_index])
                if param.is_complex():
                    complex_params.append([index, d_index])
        if sparse_params:
            raise ValueError(
                f"Sparse params at indices {sparse_params}: SparseAdam requires dense parameter tensors"
            )
        if complex_params:
            raise ValueError(
                f"Complex params at indices {complex_params}: SparseAdam does not support complex parameters"
            )

    def step(self, closure=None):
        """Perform a single optimization step (closure: reevaluates the model and returns the loss)."""
        from .. import no_grad

        loss = self._closure_loss(closure)
        with no_grad():
            for group in self.param_groups:
                beta1, beta2 = group["betas"]
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    if not p.grad.is_sparse:
                        raise RuntimeError(
                            "SparseAdam does not support dense gradients, please consider Adam instead"
                        )
                    state = self.state[p]
                    if len(state) == 0:
                        state["step"] = 0  # a plain int in torch's SparseAdam, not a tensor
                        state["exp_avg"] = zeros_like(p)
                        state["exp_avg_sq"] = zeros_like(p)
                    state["step"] += 1
                    grad = p.grad.coalesce()
                    values = grad._values().neg() if group["maximize"] else grad._values()
                    _masked_update(p, state["exp_avg"], state["exp_avg_sq"], grad._indices(), values, state["step"],
                                   lr=to_scalar(group["lr"]), beta1=beta1, beta2=beta2, eps=group["eps"])
        return loss
