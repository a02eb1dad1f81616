"""L-BFGS with an optional strong-Wolfe line search, as torch.optim.LBFGS (a port of minFunc).

All parameters are handled as one flat vector (the gradients are concatenated
once per evaluation), so the two-loop recursion is a handful of dot products
and axpys on that vector.  Scalars that torch keeps as 0-d tensors (the
curvature `ys`, `H_diag`, the `al` coefficients) stay 0-d tensors here too, so
the arithmetic rounds the same way.
"""

from __future__ import annotations

from .. import cat, zeros
from .._autograd.grad_mode import enable_grad, no_grad
from .._tensor import Tensor
from .optimizer import Optimizer, real_view, to_scalar, value_of

__all__ = ["LBFGS"]


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), clamped to `bounds`."""
    if bounds is not None:
        xmin_bound, xmax_bound = bounds
    else:
        xmin_bound, xmax_bound = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1**2 - g1 * g2
    if d2_square >= 0:
        d2 = d2_square.sqrt()
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, xmin_bound), xmax_bound)
    return (xmin_bound + xmax_bound) / 2.0


class _Bracket:
    """The line search's bracketing interval: step sizes, losses, gradients and directional derivatives."""

    def __init__(self, t, f, g, gtd) -> None:
        self.t, self.f, self.g, self.gtd = t, f, g, gtd

    def set(self, index, t, f, g, gtd) -> None:
        self.t[index], self.f[index], self.g[index], self.gtd[index] = t, f, g, gtd


def _strong_wolfe(obj_func, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """Find a step t along d meeting the strong Wolfe conditions: (loss, flat grad, t, evaluations)."""
    d_norm = d.abs().max()
    g = g.clone()
    f_new, g_new = obj_func(x, t, d)
    ls_func_evals = 1
    gtd_new = g_new.dot(d)
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    ls_iter = 0
    bracket = None
    # bracketing phase: grow t until an interval holding a Wolfe point is found
    while ls_iter < max_ls:
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket = _Bracket([t_prev, t], [f_prev, f_new], [g_prev, g_new.clone()], [gtd_prev, gtd_new])
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket = _Bracket([t], [f_new], [g_new], None)
            done = True
            break
        if gtd_new >= 0:
            bracket = _Bracket([t_prev, t], [f_prev, f_new], [g_prev, g_new.clone()], [gtd_prev, gtd_new])
            break
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        tmp = t
        t = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(min_step, max_step))
        t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new.clone(), gtd_new
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
    if ls_iter == max_ls:
        # out of evaluations: the zoom loop below will not run, so the derivatives are not needed
        bracket = _Bracket([0, t], [f, f_new], [g, g_new], None)
    low_pos, ls_func_evals = _zoom(obj_func, x, d, f, gtd, bracket, done, ls_iter, ls_func_evals, d_norm,
                                   c1, c2, tolerance_change, max_ls)
    return bracket.f[low_pos], bracket.g[low_pos], bracket.t[low_pos], ls_func_evals


def _zoom(obj_func, x, d, f, gtd, bracket, done, ls_iter, ls_func_evals, d_norm, c1, c2, tolerance_change, max_ls):
    """The zoom phase: shrink the bracket by cubic interpolation until the strong Wolfe conditions hold.
    Returns (index of the bracket's low end, evaluations)."""
    insuf_progress = False
    low_pos, high_pos = (0, 1) if bracket.f[0] <= bracket.f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket.t[1] - bracket.t[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(bracket.t[0], bracket.f[0], bracket.gtd[0], bracket.t[1], bracket.f[1],
                               bracket.gtd[1])
        # keep t away from the bracket's ends unless progress stalls
        eps = 0.1 * (max(bracket.t) - min(bracket.t))
        if min(max(bracket.t) - t, t - min(bracket.t)) < eps:
            if insuf_progress or t >= max(bracket.t) or t <= min(bracket.t):
                if abs(t - max(bracket.t)) < abs(t - min(bracket.t)):
                    t = max(bracket.t) - eps
                else:
                    t = min(bracket.t) + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
        if f_new > (f + c1 * t * gtd) or f_new >= bracket.f[low_pos]:
            bracket.set(high_pos, t, f_new, g_new.clone(), gtd_new)
            low_pos, high_pos = (0, 1) if bracket.f[0] <= bracket.f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket.t[high_pos] - bracket.t[low_pos]) >= 0:
                bracket.set(high_pos, bracket.t[low_pos], bracket.f[low_pos], bracket.g[low_pos],
                            bracket.gtd[low_pos])
            bracket.set(low_pos, t, f_new, g_new.clone(), gtd_new)
    return low_pos, ls_func_evals


class LBFGS(Optimizer):
    r"""L-BFGS, as torch.optim.LBFGS; step() needs a closure that reevaluates the model and returns the loss.

    Args:
        lr (float): learning rate (default: 1).
        max_iter (int): maximal number of iterations per step (default: 20).
        max_eval (int): maximal number of function evaluations per step (default: max_iter * 1.25).
        tolerance_grad (float): termination tolerance on first-order optimality (default: 1e-7).
        tolerance_change (float): termination tolerance on function value/parameter changes (default: 1e-9).
        history_size (int): update history size (default: 100).
        line_search_fn (str): either 'strong_wolfe' or None (default: None).
    """

    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7, tolerance_change=1e-9,
                 history_size=100, line_search_fn=None) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = {
            "lr": lr, "max_iter": max_iter, "max_eval": max_eval, "tolerance_grad": tolerance_grad,
            "tolerance_change": tolerance_change, "history_size": history_size, "line_search_fn": line_search_fn,
        }
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]
        self._numel_cache = None

    def _numel(self) -> int:
        if self._numel_cache is None:
            self._numel_cache = sum(2 * p.numel() if p.is_complex() else p.numel() for p in self._params)
        return self._numel_cache

    def _gather_flat_grad(self) -> Tensor:
        views = []
        for p in self._params:
            if p.grad is None:
                views.append(zeros(p.numel(), dtype=p.dtype, device=p.device))
            else:
                views.append(real_view(p.grad).reshape(-1))
        return cat(views, 0)

    def _add_grad(self, step_size, update) -> None:
        offset = 0
        step_size = value_of(step_size)
        for p in self._params:
            p = real_view(p)
            numel = p.numel()
            p.add_(update[offset : offset + numel].view_as(p), alpha=step_size)
            offset += numel

    def _clone_param(self) -> list:
        return [p.clone() for p in self._params]

    def _set_param(self, params_data) -> None:
        for p, data in zip(self._params, params_data):
            p.copy_(data)

    def _directional_evaluate(self, closure, x, t, d):
        self._add_grad(t, d)
        loss = float(closure())
        flat_grad = self._gather_flat_grad()
        self._set_param(x)
        return loss, flat_grad

    def step(self, closure):
        """Perform a single optimization step (several L-BFGS iterations)."""
        with no_grad():
            return self._step(closure)

    def _step(self, closure):
        closure = enable_grad()(closure)
        group = self.param_groups[0]
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        orig_loss = closure()
        loss = float(orig_loss)
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if flat_grad.abs().max() <= group["tolerance_grad"]:
            return orig_loss
        run = _Run(self, group, state, closure, loss, flat_grad)
        run.iterate()
        run.save()
        return orig_loss


class _Run:
    """One LBFGS.step(): the iteration variables torch keeps as locals, restored from and saved to the state."""

    def __init__(self, optimizer: LBFGS, group, state, closure, loss, flat_grad) -> None:
        self.optimizer, self.group, self.state, self.closure = optimizer, group, state, closure
        self.loss, self.flat_grad = loss, flat_grad
        self.current_evals = 1
        for key in ("d", "t", "old_dirs", "old_stps", "ro", "H_diag", "prev_flat_grad", "prev_loss"):
            setattr(self, key, state.get(key))

    def save(self) -> None:
        for key in ("d", "t", "old_dirs", "old_stps", "ro", "H_diag", "prev_flat_grad", "prev_loss"):
            self.state[key] = getattr(self, key)

    def iterate(self) -> None:
        group, state = self.group, self.state
        lr = to_scalar(group["lr"])
        max_iter, max_eval = group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            self._direction()
            if self.prev_flat_grad is None:
                self.prev_flat_grad = self.flat_grad.clone()
            else:
                self.prev_flat_grad.copy_(self.flat_grad)
            self.prev_loss = self.loss
            if state["n_iter"] == 1:
                self.t = min(1.0, 1.0 / self.flat_grad.abs().sum()) * lr
            else:
                self.t = lr
            gtd = self.flat_grad.dot(self.d)
            if gtd > -tolerance_change:
                break
            ls_func_evals, opt_cond = self._line_step(gtd, n_iter, max_iter, max_eval, tolerance_grad)
            self.current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals
            if n_iter == max_iter or self.current_evals >= max_eval or opt_cond:
                break
            if self.d.mul(self.t).abs().max() <= tolerance_change:
                break
            if abs(self.loss - self.prev_loss) < tolerance_change:
                break

    def _direction(self) -> None:
        """The descent direction d: steepest descent first, then the two-loop recursion over the history."""
        if self.state["n_iter"] == 1:
            self.d = self.flat_grad.neg()
            self.old_dirs, self.old_stps, self.ro = [], [], []
            self.H_diag = 1
            return
        history_size = self.group["history_size"]
        y = self.flat_grad.sub(self.prev_flat_grad)
        s = self.d.mul(self.t)
        ys = y.dot(s)
        if ys > 1e-10:
            if len(self.old_dirs) == history_size:
                self.old_dirs.pop(0)
                self.old_stps.pop(0)
                self.ro.pop(0)
            self.old_dirs.append(y)
            self.old_stps.append(s)
            self.ro.append(1.0 / ys)
            self.H_diag = ys / y.dot(y)
        num_old = len(self.old_dirs)
        if "al" not in self.state:
            self.state["al"] = [None] * history_size
        al = self.state["al"]
        q = self.flat_grad.neg()
        for i in range(num_old - 1, -1, -1):
            al[i] = self.old_stps[i].dot(q) * self.ro[i]
            q.add_(self.old_dirs[i], alpha=-al[i].item())
        self.d = r = q.mul(self.H_diag)
        for i in range(num_old):
            be_i = self.old_dirs[i].dot(r) * self.ro[i]
            r.add_(self.old_stps[i], alpha=(al[i] - be_i).item())

    def _line_step(self, gtd, n_iter, max_iter, max_eval, tolerance_grad):
        """Move along d (by the line search, or by the fixed step t): (evaluations, optimality reached)."""
        optimizer = self.optimizer
        line_search_fn = self.group["line_search_fn"]
        if line_search_fn is not None:
            if line_search_fn != "strong_wolfe":
                raise RuntimeError("only 'strong_wolfe' is supported")
            x_init = optimizer._clone_param()

            def obj_func(x, t, d):
                return optimizer._directional_evaluate(self.closure, x, t, d)

            self.loss, self.flat_grad, self.t, ls_func_evals = _strong_wolfe(
                obj_func, x_init, self.t, self.d, self.loss, self.flat_grad, gtd,
                max_ls=max_eval - self.current_evals,
            )
            optimizer._add_grad(self.t, self.d)
            return ls_func_evals, bool(self.flat_grad.abs().max() <= tolerance_grad)
        optimizer._add_grad(self.t, self.d)
        if n_iter != max_iter:
            self.loss = float(self.closure())
            self.flat_grad = optimizer._gather_flat_grad()
            return 1, bool(self.flat_grad.abs().max() <= tolerance_grad)
        return 0, False
