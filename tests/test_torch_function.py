"""The __torch_function__ protocol (ember/_torch_function.py): Tensor subclasses keep their class through ops,
a subclass's __torch_function__ sees the calls made on it, Parameter and Buffer opt out, and lazy modules'
uninitialized parameters refuse to be used -- each against real torch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember


def _classes(lib):
    """The same subclasses written against `lib` (torch or ember)."""

    class Plain(lib.Tensor):
        pass

    class Meta(lib.Tensor):
        """The usual metadata-carrying subclass: _make_subclass in __new__, metadata passed on to results."""

        @staticmethod
        def __new__(cls, data, meta=None, requires_grad=False):
            t = lib.Tensor._make_subclass(cls, data, requires_grad)
            t.meta = meta
            return t

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            metas = [a.meta for a in args if isinstance(a, Meta)]
            out = super().__torch_function__(func, types, args, kwargs or {})
            if isinstance(out, Meta) and metas:
                out.meta = metas[0]
            return out

    class Logging(lib.Tensor):
        calls: list = []

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            cls.calls.append(func.__name__)
            return super().__torch_function__(func, types, args, kwargs or {})

    return Plain, Meta, Logging


def _describe(value) -> str:
    if isinstance(value, (tuple, list)):
        return f"{type(value).__name__}({','.join(_describe(item) for item in value)})"
    if isinstance(value, (torch.Tensor, ember.Tensor)):
        return f"{type(value).__name__}[{getattr(value, 'meta', None)}]"
    return type(value).__name__


PROGRAMS = {
    "add": lambda lib, m: m + 1, "radd": lambda lib, m: 1 + m, "matmul": lambda lib, m: m @ m.t(),
    "F.relu": lambda lib, m: lib.nn.functional.relu(m), "max_dim": lambda lib, m: m.max(1),
    "split": lambda lib, m: m.split(1), "cat": lambda lib, m: lib.cat([m, m]), "getitem": lambda lib, m: m[0],
    "sum": lambda lib, m: m.sum(), "inplace": lambda lib, m: m.clone().add_(1),
    "stack_mixed": lambda lib, m: lib.stack([m, lib.ones(2, 3)]), "where": lambda lib, m: lib.where(m > 0, m, 0.0),
    "item": lambda lib, m: m[0, 0].item(), "eq": lambda lib, m: m == 1, "softmax": lambda lib, m: m.softmax(-1),
    "unbind": lambda lib, m: m.unbind(0), "numel": lambda lib, m: m.numel(), "T": lambda lib, m: m.T,
    "data": lambda lib, m: m.data, "detach": lambda lib, m: m.detach(), "to": lambda lib, m: m.to(lib.float64),
    "new_zeros": lambda lib, m: m.new_zeros(2), "zeros_like": lambda lib, m: lib.zeros_like(m),
    "sort": lambda lib, m: m.sort(), "iter": lambda lib, m: list(m), "neg": lambda lib, m: -m,
    "rpow": lambda lib, m: 2 ** m, "view": lambda lib, m: m.view(-1), "norm": lambda lib, m: lib.linalg.norm(m),
    "fft": lambda lib, m: lib.fft.fft(m), "einsum": lambda lib, m: lib.einsum("ij->j", m),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_subclass_results_keep_class_and_metadata(name):
    described = []
    for lib in (torch, ember):
        _, Meta, _ = _classes(lib)
        m = Meta(lib.ones(2, 3), meta="hello")
        described.append(_describe(PROGRAMS[name](lib, m)))
    assert described[1] == described[0]


def test_plain_subclass_propagates_through_modules_and_autograd():
    for lib in (torch, ember):
        Plain, _, _ = _classes(lib)
        lib.manual_seed(0)
        x = lib.randn(4, 3, requires_grad=True)
        t = x.as_subclass(Plain)
        out = lib.nn.Linear(3, 2)(t)
        assert type(out) is Plain
        (out * 2).sum().backward()
        assert type(x.grad) is lib.Tensor and x.grad.shape == (4, 3)


def test_logging_subclass_sees_the_calls():
    seen = []
    for lib in (torch, ember):
        _, _, Logging = _classes(lib)
        t = lib.ones(2, 2).as_subclass(Logging)
        (t @ t).relu().sum()
        lib.add(t, 1)
        lib.nn.functional.gelu(t)
        seen.append(Logging.calls)
    assert seen[1] == seen[0]


def test_parameter_and_buffer_opt_out():
    for lib in (torch, ember):
        p = lib.nn.Parameter(lib.ones(2))
        assert type(p * 2) is lib.Tensor and type(p.detach()) is lib.Tensor
        assert not lib.overrides.has_torch_function((p,))
        assert not lib.overrides.has_torch_function((lib.ones(1),))
        _, Meta, _ = _classes(lib)
        assert lib.overrides.has_torch_function((Meta(lib.ones(1)),))


@pytest.mark.parametrize("call", ["t.add(1)", "t + 1", "lib.add(t, 1)", "lib.nn.functional.relu(t)",
                                  "lib.linalg.norm(t)"])
def test_all_not_implemented_raises_type_error(call):
    """Every handler returning NotImplemented: torch's TypeError (an operator's is Python's own)."""
    messages = []
    for lib in (torch, ember):
        class Refuses(lib.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                return NotImplemented

        t = lib.ones(1).as_subclass(Refuses)
        with pytest.raises(TypeError) as caught:
            eval(call, {"lib": lib, "t": t})
        messages.append(str(caught.value).split("'")[0].split(":")[0])
    assert messages[1] == messages[0]


def test_tensor_like_object_through_a_function():
    """A non-Tensor class with __torch_function__ (torch's ScalarTensor example) handles ember.add on it."""
    for lib in (torch, ember):
        class Scalar:
            def __init__(self, value):
                self.value = value

            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                return ("handled", func.__name__, [a.value if isinstance(a, Scalar) else "t" for a in args])

        _classes(lib)  # ember switches the protocol on with the first Tensor subclass
        assert lib.add(Scalar(3), lib.ones(1)) == ("handled", "add", [3, "t"])
        assert lib.nn.functional.relu(Scalar(2))[:2] == ("handled", "relu")


def test_disable_torch_function_subclass():
    for lib in (torch, ember):
        Plain, _, _ = _classes(lib)
        t = lib.ones(2).as_subclass(Plain)
        with lib._C.DisableTorchFunctionSubclass():
            assert type(t + 1) is lib.Tensor
        assert type(t + 1) is Plain


EXPRESSIONS = ["w.sum()", "w + 1", "w.numel()", "w.dim()", "w.size()", "w * 2", "lib.sum(w)", "w.view(-1)", "w.t()",
               "w[0]", "len(w)", "w.clone()", "w.detach()", "w.to(lib.float64).shape", "type(w.cpu()).__name__",
               "w.zero_()", "w.fill_(1)", "type(w.data).__name__", "repr(w)", "w.dtype", "w.requires_grad"]


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_uninitialized_parameter_refuses_use(expression):
    outcomes = []
    for lib in (torch, ember):
        w = lib.nn.LazyLinear(3).weight
        try:
            value = eval(expression, {"lib": lib, "w": w})
            outcomes.append(("ok", str(value).replace("torch.", "").replace("ember.", "")))
        except Exception as error:  # noqa: BLE001 - the exception type is what is compared
            outcomes.append((type(error).__name__, "uninitialized" in str(error)))
    assert outcomes[1] == outcomes[0]


def test_lazy_module_still_initializes_and_trains():
    ember.manual_seed(0)
    net = ember.nn.Sequential(ember.nn.LazyLinear(4), ember.nn.ReLU(), ember.nn.LazyLinear(1))
    x = ember.randn(5, 3)
    net(x).sum().backward()
    assert net[0].weight.shape == (4, 3) and type(net[0].weight) is ember.nn.Parameter
    optimizer = ember.optim.SGD(net.parameters(), lr=0.1)
    optimizer.step()
    assert np.isfinite(net(x).detach().numpy()).all()


def test_compiled_function_runs_subclass_calls_eagerly():
    """A replay would skip the subclass's handler and return plain tensors: ember.compile runs such calls eagerly."""
    _, Meta, _ = _classes(ember)
    compiled = ember.compile(lambda t: (t * 2).relu() + 1)
    m = Meta(ember.ones(2, 3), meta="kept")
    for _ in range(3):
        out = compiled(m)
        assert type(out) is Meta and out.meta == "kept"
    plain = compiled(ember.ones(2, 3))
    assert type(plain) is ember.Tensor and plain.tolist() == [[3.0] * 3] * 2
