"""einsum and tensordot: one einsum op on explicit equations, its backward again einsums.

The public function resolves what torch allows in an equation (ellipsis,
implicit output, size-1 broadcasting of a subscript, the sublist format) into
an explicit equation of single letters whose operands already have matching
sizes (broadcast operands are expanded, so their gradients sum back through
`expand`).  The op then only runs `xp.einsum(..., optimize=True)`.  The
gradient of operand i is the einsum of the output gradient with the other
operands, onto operand i's subscripts: a subscript only operand i has gets a
vector of ones (the gradient is constant along it), and a repeated subscript
(a diagonal, as in "ii->i") is put back on the diagonal through an identity.
"""

from __future__ import annotations

import string

from .. import _dtype as dt
from .._dispatch import SAVE_INPUTS, OpDef, call
from .._tensor import SCALAR_NAMES, Tensor
from ._api import export

LETTERS = string.ascii_uppercase + string.ascii_lowercase  # torch orders uppercase before lowercase


def _einsum_rule(args, params):
    dtype = args[0]._dtype
    return dtype, dtype


def _einsum_impl(xp, *arrays, equation):
    return xp.einsum(equation, *arrays, optimize=len(arrays) > 2)


def _einsum_backward(ctx, g):
    inputs_part, output = ctx.params["equation"].split("->")
    subscripts = inputs_part.split(",")
    operands = ctx.inputs
    used = set(ctx.params["equation"])
    fresh = [c for c in LETTERS if c not in used]
    grads = []
    for i, subs in enumerate(subscripts):
        if not ctx.needs_input_grad[i]:
            grads.append(None)
            continue
        terms, tensors = [output], [g]
        for j, other in enumerate(subscripts):
            if j != i:
                terms.append(other)
                tensors.append(operands[j].conj() if operands[j]._dtype.is_complex else operands[j])
        available = set("".join(terms))
        target, seen, spare = [], set(), list(fresh)
        for position, letter in enumerate(subs):
            size = operands[i].shape[position]
            if letter in seen:
                new = spare.pop()
                terms.append(letter + new)
                tensors.append(_eye(size, g))
                target.append(new)
                continue
            seen.add(letter)
            if letter not in available:
                terms.append(letter)
                tensors.append(g.new_ones((size,)))
                available.add(letter)
            target.append(letter)
        grads.append(call(_EINSUM, tuple(tensors), {"equation": ",".join(terms) + "->" + "".join(target)}))
    return tuple(grads)


def _eye(n: int, like: Tensor) -> Tensor:
    from .creation import eye

    return eye(n, dtype=like.dtype, device=like.device)


_EINSUM = OpDef("einsum", _einsum_impl, _einsum_backward, dtype_rule=_einsum_rule, saves=SAVE_INPUTS)


# ---------------------------------------------------------------- parsing torch's equations


def _sublist_equation(args) -> tuple:
    """einsum(op0, [0, 1], op1, [1, 2], [0, 2]) -> ("AB,BC->AC", operands)."""

    def letters(sublist):
        return "".join("..." if s is Ellipsis else LETTERS[s] for s in sublist)

    operands, terms = list(args[0::2]), []
    output = None
    if len(args) % 2:
        output = letters(args[-1])
        operands = operands[:-1]
    terms = [letters(s) for s in args[1::2]]
    equation = ",".join(terms) + ("" if output is None else "->" + output)
    return equation, operands


def _split_terms(equation: str, operands) -> tuple:
    equation = equation.replace(" ", "")
    if "->" in equation:
        lhs, output = equation.split("->", 1)
    else:
        lhs, output = equation, None
    terms = lhs.split(",")
    if len(terms) > len(operands):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
    if len(terms) < len(operands):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    for index, character in enumerate(equation):
        if character not in LETTERS and character not in ".,->":
            raise RuntimeError(
                f"einsum(): invalid subscript given at index {index} in the equation string, subscripts must be in "
                "[a-zA-Z]"
            )
    return terms, output


def _resolve(equation: str, operands) -> tuple:
    """The explicit equation and the operands expanded where a subscript of size 1 broadcasts."""
    terms, output = _split_terms(equation, operands)
    ellipsis_dims = 0
    for index, (term, operand) in enumerate(zip(terms, operands)):
        named = len(term.replace("...", ""))
        if "..." not in term and named != operand.ndim:
            raise RuntimeError(
                f"einsum(): the number of subscripts in the equation ({named}) does not match the number of "
                f"dimensions ({operand.ndim}) for operand {index} and no ellipsis was given"
            )
        if "..." in term:
            if named > operand.ndim:
                raise RuntimeError(
                    f"einsum(): the number of subscripts in the equation ({named}) is more than the number of "
                    f"dimensions ({operand.ndim}) for operand {index}"
                )
            ellipsis_dims = max(ellipsis_dims, operand.ndim - named)
    spare = [c for c in LETTERS if c not in equation]
    ellipsis_letters = "".join(spare[:ellipsis_dims])
    explicit = []
    for term, operand in zip(terms, operands):
        if "..." in term:
            count = operand.ndim - len(term.replace("...", ""))
            term = term.replace("...", ellipsis_letters[ellipsis_dims - count:])
        explicit.append(term)
    if output is None:
        counts = {}
        for term in terms:
            for c in term.replace("...", ""):
                counts[c] = counts.get(c, 0) + 1
        output = ellipsis_letters + "".join(sorted(c for c, n in counts.items() if n == 1))
    else:
        output = output.replace("...", ellipsis_letters)
        _check_output(output, explicit)
    operands = _broadcast_subscripts(explicit, operands)
    return ",".join(explicit) + "->" + output, operands


def _check_output(output: str, terms) -> None:
    present = set("".join(terms))
    for c in output:
        if c not in present:
            raise RuntimeError(f"einsum(): output subscript {c} does not appear in the equation for any input operand")
        if output.count(c) > 1:
            raise RuntimeError(f"einsum(): output subscript {c} appears more than once in the output")


def _broadcast_subscripts(terms, operands) -> list:
    sizes = {}
    for index, (term, operand) in enumerate(zip(terms, operands)):
        for c, n in zip(term, operand.shape):
            seen = sizes.get(c)
            if seen is None or seen == 1:
                sizes[c] = n
            elif n != 1 and n != seen:
                raise RuntimeError(
                    f"einsum(): subscript {c} has size {n} for operand {index} which does not broadcast with "
                    f"previously seen size {seen}"
                )
    result = []
    for term, operand in zip(terms, operands):
        target = tuple(sizes[c] for c in term)
        if target != tuple(operand.shape) and len(set(term)) == len(term):
            operand = operand.expand(target)
        result.append(operand)
    return result


def _contracts(equation: str, shapes) -> bool:
    """Whether a subscript is summed between two operands (torch then calls bmm, which has no bool kernel);
    one of size 1 in all operands but one is summed out of that one alone."""
    inputs, output = equation.split("->")
    terms = inputs.split(",")
    for c in set(inputs) - {","} - set(output):
        sizes = [shape[term.index(c)] for term, shape in zip(terms, shapes) if c in term]
        if len(sizes) > 1 and sum(n != 1 for n in sizes) != 1:
            return True
    return False


@export(method=False)
def einsum(*args) -> Tensor:
    """Einstein summation over operands by a subscript equation (torch.einsum)."""
    if args and isinstance(args[0], str):
        equation, operands = args[0], list(args[1:])
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = list(operands[0])
    else:
        equation, operands = _sublist_equation(args)
    if not operands:
        raise RuntimeError("einsum(): must provide at least one operand")
    first = operands[0]._dtype
    for operand in operands[1:]:
        if operand._dtype is not first:
            raise RuntimeError(
                f"expected scalar type {SCALAR_NAMES[first.name]} but found {SCALAR_NAMES[operand._dtype.name]}"
            )
    shapes = [tuple(o.shape) for o in operands]
    equation, operands = _resolve(equation, operands)
    if first is dt.bool_ and _contracts(equation, shapes):
        raise NotImplementedError("\"bmm\" not implemented for 'Bool'")
    if first.category < 2 and first is not dt.int64 and _sums_alone(equation, shapes):
        # torch sums a subscript that only one operand has with sum(), which promotes to int64
        operands = [operand.to(dt.int64) for operand in operands]
    return call(_EINSUM, tuple(operands), {"equation": equation})


def _sums_alone(equation: str, shapes) -> bool:
    inputs, output = equation.split("->")
    terms = inputs.split(",")
    for c in set(inputs) - {","} - set(output):
        sizes = [shape[term.index(c)] for term, shape in zip(terms, shapes) if c in term]
        if len(sizes) == 1 or sum(n != 1 for n in sizes) == 1:
            return True
    return False


@export(method=False)
def tensordot(a: Tensor, b: Tensor, dims=2, out=None) -> Tensor:
    """Contract `dims` of a with `dims` of b: an int (a's last n with b's first n) or two lists."""
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        dims_a, dims_b = list(range(-dims, 0)), list(range(dims))
    else:
        dims_a, dims_b = list(dims[0]), list(dims[1])
        if isinstance(dims_a[0] if dims_a else None, (list, tuple)):
            dims_a, dims_b = list(dims_a[0]), list(dims_b[0])
    if len(dims_a) != len(dims_b):
        raise RuntimeError("both dimension lists should have same length")
    if a._dtype is not b._dtype:
        raise RuntimeError("both inputs should have same dtype")
    if a._dtype is dt.bool_ and a.numel() and b.numel():
        raise NotImplementedError("\"addmm_impl_cpu_\" not implemented for 'Bool'")
    a_letters = list(LETTERS[: a.ndim])
    b_letters = list(LETTERS[a.ndim: a.ndim + b.ndim])
    for da, db in zip(dims_a, dims_b):
        if a.shape[da] != b.shape[db]:
            raise RuntimeError(
                f"contracted dimensions need to match, but first has size {a.shape[da]} in dim {da} and second has "
                f"size {b.shape[db]} in dim {db}"
            )
        b_letters[db] = a_letters[da]
    contracted = {a_letters[d] for d in dims_a}
    if len(contracted) != len(dims_a):
        raise RuntimeError("both dimension lists should not contain repeated dims")
    output = [c for c in a_letters if c not in contracted] + [c for c in b_letters if c not in contracted]
    equation = "".join(a_letters) + "," + "".join(b_letters) + "->" + "".join(output)
    result = call(_EINSUM, (a, b), {"equation": equation})
    if out is not None:
        from ._api import write_out

        return write_out(out, result)
    return result
