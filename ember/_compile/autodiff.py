"""Backward kernels for fusion groups: reverse-mode differentiation of a group's micro-IR, in one kernel.

The backward kernel of a group takes the group's saved inputs and the gradients of its outputs, recomputes
the forward values it needs (cheap: pointwise math and row reductions, in cache), then walks the group's
nodes in reverse, adding each operand's gradient contribution (lowering.DERIVATIVES for pointwise ops;
sum/mean/amax, softmax, log_softmax and layer norm by their own rules, their row reductions in the same
kernel).  Contributions to a row-level value from an elem-level use are summed over the row in the kernel.

Kernel outputs are per (input, level): an input gets an elem gradient (full shape; broadcast inputs are
summed back to their shape by the caller), a col gradient (a bias or norm weight over the last dim: K sums
accumulated across rows in the kernel: float per 64-row block, the blocks in double) and/or a row gradient
(L + (1,)).  Steps no output needs are dropped.  A group with an op that has no formula gets no backward
kernel (recompute fallback).
"""

from __future__ import annotations

from . import lowering
from .fusion import Kernel, KernelBuilder, _input_kind, finish_kernel, kind_of, lower_forward
from .graph import Value


class NoFormula(Exception):
    pass


class BackwardKernel:
    """The backward kernel of a group and how to call it: which inputs it covers, and its outputs."""

    def __init__(self, kernel: Kernel, n_inputs: int, output_specs: list, covered: set) -> None:
        self.kernel = kernel
        self.n_inputs = n_inputs  # kernel arg indices below this are group inputs; the rest are output grads
        self.output_specs = output_specs  # (input indices, level) per kernel output
        self.covered = covered  # input indices it computes gradients for
        self.run = None


def build_backward_kernel(group, name: str, wanted) -> BackwardKernel | None:
    """The backward kernel for the gradients of the inputs whose index is in `wanted`, or None."""
    kernel = Kernel(name, "float" if group.dtype.name == "float32" else "double", group.R, group.K)
    inputs = list(group.inputs)
    builder = KernelBuilder(group, kernel, inputs)
    try:
        env, extras = lower_forward(builder, group)
        accumulated = _reverse(builder, group, env, extras, wanted, len(inputs))
    except NoFormula:
        return None
    if len(inputs) != len(group.inputs):
        return None  # the lowering met an input the forward did not (cannot happen; be safe)
    # one kernel output per distinct gradient: the two operands of an add (a residual) get the same temporary,
    # written once and handed to both
    specs, position = [], {}
    for key, temp in accumulated.items():
        if isinstance(key, tuple) and key[0] == "input":
            _, index, level = key
            if (temp, level) not in position:
                position[(temp, level)] = len(specs)
                specs.append(([], level))
                kernel.outputs.append((temp, level))
            specs[position[(temp, level)]][0].append(index)
    if not specs:
        return None
    _prune(kernel)
    finish_kernel(kernel)
    specs = [(tuple(indices), level) for indices, level in specs]
    return BackwardKernel(kernel, len(group.inputs), specs, {i for indices, _ in specs for i in indices})


def _reverse(b: KernelBuilder, group, env: dict, extras: dict, wanted, n_inputs: int) -> dict:
    accumulated: dict = {}
    for number, value in enumerate(group.outputs):
        level = group.level_of(value.shape)
        accumulated[id(value)] = b.load_index(n_inputs + number, "full" if level == "elem" else "row")

    def contribute(value, temp, use_level):
        if temp is None or not isinstance(value, Value):
            return
        if group.produces(value):
            key, target = id(value), group.level_of(value.shape)
        else:
            index = group.inputs.index(value)
            if index not in wanted:
                return
            kind = _input_kind(group, value.shape, use_level)
            target = "row" if kind in ("row", "scalar") else "elem"
            if kind == "suffix" and use_level == "elem" and group.K != 1:
                target = "col"  # a bias or norm weight over the last dim: its gradient summed over rows in-kernel
            key = ("input", index, target)
        if target == "row" and use_level == "elem":
            temp = b.reduce("sum", temp, False)
        previous = accumulated.get(key)
        accumulated[key] = temp if previous is None else b.op("add", previous, temp)

    for node in reversed(group.nodes):
        grad = accumulated.get(id(node.results[0]))
        if grad is None:
            continue
        kind = kind_of(node)
        if kind == "pointwise":
            rule = lowering.DERIVATIVES.get(node.op.name)
            if rule is None:
                raise NoFormula(node.op.name)
            level = group.level_of(node.results[0].shape)
            operands = [b.operand(a, level, env) for a in node.args]
            contributions = rule(b, grad, operands, env[id(node.results[0])][0], node.params)
            for arg, contribution in zip(node.args, contributions):
                contribute(arg, contribution, level)
        elif kind in ("reduce", "reduce_all"):
            contribute(node.args[0], _reduce_rule(b, node, grad, env, extras), "elem")
        elif node.op.name == "softmax":
            y = env[id(node.results[0])][0]
            total = b.reduce("sum", b.op("mul", grad, y), False)
            contribute(node.args[0], b.op("mul", y, b.op("sub", grad, total)), "elem")
        elif node.op.name == "log_softmax":
            y = env[id(node.results[0])][0]
            total = b.reduce("sum", grad, False)
            contribute(node.args[0], b.op("sub", grad, b.op("mul", b.op("exp", y), total)), "elem")
        else:
            _layer_norm_rule(b, node, grad, env, extras, contribute)
    return accumulated


def _reduce_rule(b: KernelBuilder, node, grad, env, extras):
    reduction = lowering.REDUCTIONS[node.op.name]
    if reduction == "sum":
        return grad
    if reduction == "mean":
        return b.op("div_K", grad)
    # amax: ties share the gradient (as eager's amax backward)
    source = extras[id(node)]["source"]
    chosen = b.op("eq", source, env[id(node.results[0])][0])
    count = b.reduce("sum", chosen, False)
    # g / count * chosen, not where(): a row whose max is nan has no chosen element, and eager's
    # g * mask / count gives it 0 / 0 = nan everywhere (as torch)
    return b.op("mul", b.op("div", grad, count), chosen)


def _layer_norm_rule(b: KernelBuilder, node, grad, env, extras, contribute):
    """dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)), dw = g * xhat, db = g (mean and rstd
    are not differentiable outputs, as in eager)."""
    x, weight, bias = node.args
    saved = extras[id(node)]
    xhat = saved["y_normalized"]
    dxhat = grad if weight is None else b.op("mul", grad, b.operand(weight, "elem", env))
    mean_dxhat = b.reduce("sum", dxhat, True)
    mean_dxhat_xhat = b.reduce("sum", b.op("mul", dxhat, xhat), True)
    dx = b.op("mul", saved["rstd"], b.op("sub", b.op("sub", dxhat, mean_dxhat), b.op("mul", xhat, mean_dxhat_xhat)))
    contribute(x, dx, "elem")
    if weight is not None:
        contribute(weight, b.op("mul", grad, xhat), "elem")
    if bias is not None:
        contribute(bias, grad, "elem")


def _prune(kernel: Kernel) -> None:
    """Drop steps no output needs (forward values the gradients do not read)."""
    by_name = {step[1]: step for step in kernel.steps}
    needed: set = set()
    stack = [name for name, _ in kernel.outputs]
    while stack:
        name = stack.pop()
        if name in needed or name not in by_name:
            continue
        needed.add(name)
        step = by_name[name]
        if step[0] == "op":
            stack.extend(step[5])
        elif step[0] == "reduce":
            stack.append(step[3])
    kernel.steps = [step for step in kernel.steps if step[1] in needed]
