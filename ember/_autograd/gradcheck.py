"""gradcheck and gradgradcheck: analytical Jacobians against central finite differences.

As torch's: inputs that require grad must be float64 (or complex128); every
output's Jacobian is compared column by column; failures raise GradcheckError
(or return False with raise_exception=False).
"""

from __future__ import annotations

import numpy as np


class GradcheckError(RuntimeError):
    """A Jacobian mismatch found by gradcheck."""


def _as_tuple(value):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def _differentiable(outputs):
    return [o for o in outputs if hasattr(o, "_dtype") and o._dtype.category >= 2]


def _numerical_jacobians(fn, inputs, eps: float):
    """One Jacobian per (input, output) pair: d out.flatten() / d in.flatten() by central differences."""
    targets = [i for i, x in enumerate(inputs) if hasattr(x, "_data") and x.requires_grad]
    # evaluated with grad enabled: gradgradcheck's function runs autograd inside
    if targets is not None:
        outputs = _differentiable(_as_tuple(fn(*inputs)))
        jacobians = {(i, j): np.zeros((inputs[i].numel(), o.numel()), np.float64 if not o.is_complex()
                     else np.complex128) for i in targets for j, o in enumerate(outputs)}
        for i in targets:
            flat = inputs[i]._data.reshape(-1) if inputs[i]._data.flags.c_contiguous else None
            if flat is None:
                raise GradcheckError("gradcheck needs contiguous inputs")
            for k in range(flat.size):
                original = flat[k]
                flat[k] = original + eps
                plus = [o._data.copy() for o in _differentiable(_as_tuple(fn(*inputs)))]
                flat[k] = original - eps
                minus = [o._data.copy() for o in _differentiable(_as_tuple(fn(*inputs)))]
                flat[k] = original
                for j in range(len(outputs)):
                    jacobians[(i, j)][k] = ((plus[j] - minus[j]) / (2 * eps)).reshape(-1)
    return jacobians, outputs, targets


def _analytical_jacobians(fn, inputs, targets, outputs_count):
    from .functions import grad

    outputs = _differentiable(_as_tuple(fn(*inputs)))
    jacobians = {}
    for j, output in enumerate(outputs):
        if not output.requires_grad:  # a constant output (e.g. a zero gradient): its Jacobian is zero
            continue
        for m in range(output.numel()):
            cotangent = output.new_zeros(output.shape).reshape(-1)
            cotangent[m] = 1.0
            cotangent = cotangent.reshape(output.shape)
            grads = grad([output], [inputs[i] for i in targets], [cotangent], retain_graph=True,
                         allow_unused=True)
            for i, g in zip(targets, grads):
                key = (i, j)
                if key not in jacobians:
                    jacobians[key] = np.zeros((inputs[i].numel(), output.numel()), np.float64)
                if g is not None:  # (a complex input's: its real part, as the numerical one perturbs that)
                    jacobians[key][:, m] = np.real(g._data.reshape(-1))
    return jacobians


def _forward_jacobians(fn, inputs, targets):
    """The Jacobians by forward-mode AD: one basis tangent per input element."""
    from . import forward_ad

    jacobians = {}
    for i in targets:
        for k in range(inputs[i].numel()):
            tangent = inputs[i].new_zeros(inputs[i].shape).reshape(-1)
            tangent[k] = 1.0
            with forward_ad.dual_level():
                args = list(inputs)
                args[i] = forward_ad.make_dual(inputs[i].detach(), tangent.reshape(inputs[i].shape))
                outputs = _differentiable(_as_tuple(fn(*args)))
                for j, output in enumerate(outputs):
                    column = forward_ad.unpack_dual(output).tangent
                    jacobian = jacobians.setdefault((i, j), np.zeros((inputs[i].numel(), output.numel())))
                    if column is not None:
                        jacobian[k] = column._data.reshape(-1)
    return jacobians


def _as_tensor(array, like):
    """A Jacobian as a tensor of the input's dtype, as torch prints it."""
    from .. import tensor

    return tensor(array, dtype=like.dtype)


_NONDET_NOTE = (
    "\n\nNOTE: If your op relies on non-deterministic operations i.e., it is listed here:\n"
    "https://pytorch.org/docs/stable/generated/torch.use_deterministic_algorithms.html\n"
    "this failure might be expected.\n\n"
    "If you are adding a new operator, please file an issue and then use one of the\n"
    "workarounds. The workaround depends on how your test invokes gradcheck/gradgradcheck.\n"
    "If the test\n"
    "- manually invokes gradcheck/gradgradcheck, then call gradcheck/gradgradcheck\n"
    "  with `nondet_tol=<tol>` as a keyword argument.\n"
    "- is OpInfo-based (e.g., in test_ops_gradients.py), then modify the OpInfo for the test\n"
    "  to have `gradcheck_nondet_tol=<tol>`.\n"
    "- is a Module test (e.g., in common_nn.py), then modify the corresponding\n"
    "  module_test entry to have `gradcheck_nondet_tol=<tol>`\n"
)


def _failure(message: str, raise_exception: bool) -> bool:
    if raise_exception:
        raise GradcheckError(message)
    return False


def gradcheck(func, inputs, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, nondet_tol: float = 0.0, check_undefined_grad: bool = True,
              check_grad_dtypes: bool = False, check_batched_grad: bool = False, fast_mode: bool = False,
              check_forward_ad: bool = False, **unused) -> bool:
    """Check the gradients computed by autograd against finite differences (float64 inputs)."""
    inputs = _as_tuple(inputs)
    for x in inputs:
        if hasattr(x, "_data") and x.requires_grad and x._dtype.name not in ("float64", "complex128"):
            import warnings

            warnings.warn(
                f"Input #{inputs.index(x)} requires gradient and is not a double precision floating point or "
                "complex. This check will likely fail if all the inputs are not of double precision floating "
                "point or complex. ",
                stacklevel=2,
            )
    if fast_mode and not check_forward_ad and _real_inputs(inputs):
        return _fast_gradcheck(func, inputs, eps, atol, rtol, nondet_tol, raise_exception)
    numerical, outputs, targets = _numerical_jacobians(func, inputs, eps)
    if not targets:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of them "
                         "have requires_grad=True.")
    for j, output in enumerate(outputs):  # torch: an output that does not require grad must be constant
        if not output.requires_grad and any(np.any(numerical[(i, j)] != 0) for i in targets):
            return _failure("Numerical gradient for function expected to be zero", raise_exception)
    analytical = _analytical_jacobians(func, inputs, targets, len(outputs))
    again = _analytical_jacobians(func, inputs, targets, len(outputs))
    for key, first in analytical.items():
        if np.abs(first - again[key]).max(initial=0) > nondet_tol:
            return _failure("Backward is not reentrant, i.e., running backward with same input and grad_output "
                            "multiple times gives different values, although analytical gradient matches "
                            f"numerical gradient.The tolerance for nondeterminism was {nondet_tol}." + _NONDET_NOTE,
                            raise_exception)
    checks = [("Jacobian", analytical)]
    if check_forward_ad:
        checks.append(("Jacobian computed with forward mode", _forward_jacobians(func, inputs, targets)))
    for what, jacobians in checks:
        for key, expected in numerical.items():
            actual = jacobians.get(key, np.zeros_like(expected))
            if not np.allclose(actual, expected.real if not np.iscomplexobj(actual) else expected, rtol=rtol,
                               atol=atol, equal_nan=True):
                return _failure(f"{what} mismatch for output {key[1]} with respect to input {key[0]},\n"
                                f"numerical:{_as_tensor(expected, inputs[key[0]])}\n"
                                f"analytical:{_as_tensor(actual, inputs[key[0]])}\n",
                                raise_exception)
    if not _zero_grad_output_gives_zero(func, inputs, targets):
        return _failure("backward not multiplied by grad_output", raise_exception)
    return True


def _real_inputs(inputs) -> bool:
    return all(not (hasattr(x, "_data") and x.requires_grad and x.is_complex()) for x in inputs)


def _random_unit(numel: int, generator, like):
    """torch's _vec_from_tensor: rand(numel) (default dtype) from the check's own generator, converted to the
    tensor's dtype and divided by its norm."""
    from .. import rand

    vector = rand(numel, generator=generator).to(like.dtype)
    return vector / vector.norm()


_FAST_MODE_NOTE = (
    "\nThe above quantities relating the numerical and analytical jacobians are computed \n"
    "in fast mode. See: https://github.com/pytorch/pytorch/issues/53876 for more background \n"
    "about fast mode. Below, we recompute numerical and analytical jacobians in slow mode:\n\n"
)
_FAST_FAIL_SLOW_OK = (
    "Fast gradcheck failed but element-wise differences are small. This means that the\n"
    "test might've passed in slow_mode!\n\n"
    "If you are adding a new operator, please file an issue and then use one of the\n"
    "workarounds. The workaround depends on how your test invokes gradcheck/gradgradcheck:\n\n"
    "If the test\n"
    "- manually invokes gradcheck/gradgradcheck, then call gradcheck/gradgradcheck\n"
    "  with `fast_mode=False` as a keyword argument.\n"
    "- is OpInfo-based (e.g., in test_ops_gradients.py), then modify the OpInfo for the test\n"
    "  to have `gradcheck_fast_mode=False`\n"
    "- is a Module test (e.g., in common_nn.py), then modify the corresponding\n"
    "  module_test entry to have `gradcheck_fast_mode=False`\n"
)


def _fast_gradcheck(func, inputs, eps, atol, rtol, nondet_tol, raise_exception) -> bool:
    """torch's fast mode (pytorch/pytorch#53876): v^T J u for random unit u (per input) and v (per output),
    numerically by a central difference along u and analytically by one vjp with v, compared with atol scaled
    by sum(u) * sum(v).  u and v come from a fresh Generator (torch's default seed), so they are torch's."""
    from .. import Generator
    from .functions import grad

    targets = [i for i, x in enumerate(inputs) if hasattr(x, "_data") and x.requires_grad]
    if not targets:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of them "
                         "have requires_grad=True.")
    outputs = _differentiable(_as_tuple(func(*inputs)))
    generator = Generator()
    all_u = [_random_unit(inputs[i].numel(), generator, inputs[i]) for i in targets]
    all_v = [_random_unit(o.numel(), generator, o) for o in outputs]
    numerical = []  # [input][output]: v . (f(x + eps u) - f(x - eps u)) / (2 eps)
    for i, u in zip(targets, all_u):
        entry = inputs[i].data  # torch perturbs input.data: its own version counter, so saved tensors stay valid
        original = entry.clone()
        step = u.reshape(entry.shape) * eps
        entry.copy_(original - step)
        below = [o.detach().clone() for o in _differentiable(_as_tuple(func(*inputs)))]
        entry.copy_(original + step)
        above = [o.detach().clone() for o in _differentiable(_as_tuple(func(*inputs)))]
        entry.copy_(original)
        numerical.append([float((v * ((b - a) / (2 * eps)).reshape(-1)).sum())
                          for v, a, b in zip(all_v, below, above)])
    analytical = []  # [output][input]: (v^T J) . u
    for output, v in zip(outputs, all_v):
        if output.requires_grad:
            first = grad([output], [inputs[i] for i in targets], [v.reshape(output.shape)], retain_graph=True,
                         allow_unused=True)
            again = grad([output], [inputs[i] for i in targets], [v.reshape(output.shape)], retain_graph=True,
                         allow_unused=True)
            for g, h in zip(first, again):
                if g is not None and h is not None and float((g - h).abs().max()) > nondet_tol:
                    return _failure("Backward is not reentrant, i.e., running backward with same input and "
                                    "grad_output multiple times gives different values, although analytical "
                                    "gradient matches numerical gradient.The tolerance for nondeterminism was "
                                    f"{nondet_tol}." + _NONDET_NOTE, raise_exception)
        else:
            first = [None] * len(targets)
        row = [0.0 if g is None else float((g.reshape(-1) * u).sum()) for g, u in zip(first, all_u)]
        analytical.append(row)
    for position, i in enumerate(targets):
        for j in range(len(outputs)):
            n, a = numerical[position][j], analytical[j][position]
            tolerance = atol * float(all_u[position].sum()) * float(all_v[j].sum())
            if not abs(a - n) <= tolerance + rtol * abs(n):
                message = (f"Jacobian mismatch for output {j} with respect to input {i},\n"
                           f"numerical:{n!r}\nanalytical:{a!r}\n")
                return _failure(message + _slow_mode_report(func, inputs, targets, i, j, eps, atol, rtol),
                                raise_exception)
    if not _zero_grad_output_gives_zero(func, inputs, targets):
        return _failure("backward not multiplied by grad_output", raise_exception)
    return True


def _slow_mode_report(func, inputs, targets, i, j, eps, atol, rtol) -> str:
    """torch's fast-mode failure appendix: the slow-mode Jacobians of the failing pair."""
    numerical, outputs, _ = _numerical_jacobians(func, inputs, eps)
    analytical = _analytical_jacobians(func, inputs, targets, len(outputs))
    slow_numerical = numerical[(i, j)]
    slow_analytical = analytical.get((i, j), np.zeros_like(slow_numerical))
    difference = float(np.abs(slow_numerical - slow_analytical).max(initial=0))
    message = (_FAST_MODE_NOTE + f"Numerical:\n {_as_tensor(slow_numerical, inputs[i])}\n"
               f"Analytical:\n{_as_tensor(slow_analytical, inputs[i])}\n\n"
               f"The max per-element difference (slow mode) is: {difference}.\n")
    if np.allclose(slow_analytical, slow_numerical, rtol=rtol, atol=atol):
        message += _FAST_FAIL_SLOW_OK
    return message


def _zero_grad_output_gives_zero(fn, inputs, targets) -> bool:
    """torch's check that a backward scales with grad_output: zero grad_outputs must give zero gradients."""
    from .functions import grad

    outputs = [o for o in _differentiable(_as_tuple(fn(*inputs))) if o.requires_grad]
    if not outputs:
        return True
    grads = grad(outputs, [inputs[i] for i in targets], [o.new_zeros(o.shape) for o in outputs],
                 allow_unused=True)
    return all(g is None or not bool((g.to_dense() if g.is_sparse else g).any()) for g in grads)


def gradgradcheck(func, inputs, grad_outputs=None, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
                  gen_non_contig_grad_outputs: bool = False, raise_exception: bool = True, **unused) -> bool:
    """gradcheck of the function (inputs, grad_outputs) -> d(func)/d(inputs) . grad_outputs."""
    from .. import _tensor
    from .functions import grad

    inputs = _as_tuple(inputs)
    outputs = _differentiable(_as_tuple(func(*inputs)))
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = tuple(
            _tensor.Tensor._make(rng.standard_normal(o.shape).astype(o._dtype.np_dtype), o._dtype, o._device)
            .requires_grad_(True)
            for o in outputs
        )
    grad_outputs = _as_tuple(grad_outputs)
    count = len(inputs)
    targets = [i for i, x in enumerate(inputs) if hasattr(x, "_data") and x.requires_grad]

    def first_order(*values):
        args, cotangents = values[:count], values[count:]
        outs = _differentiable(_as_tuple(func(*args)))
        grads = grad(outs, [args[i] for i in targets], cotangents, create_graph=True, allow_unused=True)
        return tuple(g if g is not None else args[i].new_zeros(args[i].shape) for g, i in zip(grads, targets))

    return gradcheck(first_order, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
