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
                if g is not None:
                    jacobians[key][:, m] = g._data.reshape(-1)
    return jacobians


def gradcheck(func, inputs, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, nondet_tol: float = 0.0, check_undefined_grad: bool = True,
              check_grad_dtypes: bool = False, check_batched_grad: bool = False, fast_mode: bool = False,
              **unused) -> bool:
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
    numerical, outputs, targets = _numerical_jacobians(func, inputs, eps)
    if not targets:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of the them "
                         "have requires_grad=True.")
    analytical = _analytical_jacobians(func, inputs, targets, len(outputs))
    for key, expected in numerical.items():
        actual = analytical.get(key, np.zeros_like(expected))
        if not np.allclose(actual, expected.real if not np.iscomplexobj(actual) else expected, rtol=rtol,
                           atol=atol, equal_nan=True):
            message = (f"Jacobian mismatch for output {key[1]} with respect to input {key[0]},\n"
                       f"numerical:{expected}\nanalytical:{actual}\n")
            if raise_exception:
                raise GradcheckError(message)
            return False
    return True


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
