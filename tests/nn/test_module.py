"""nn.Module's API against torch.nn.Module: registration, traversal, state_dict, hooks, copying, repr, containers.

Most tests run the same function on both libraries (`both`) and compare the plain Python results
(names, flags, shapes, strings), so the expected behaviour is always torch's own.
"""

from __future__ import annotations

import copy
import io
import pickle
from collections import OrderedDict

import numpy as np
import pytest
from _parity import copy_state

import ember

torch = pytest.importorskip("torch")


def both(fn):
    """fn(lib) for torch and ember; assert the results are equal and return them."""
    expected = fn(torch)
    actual = fn(ember)
    assert actual == expected, f"\nember: {actual}\ntorch: {expected}"
    return actual


def raises_both(fn, error=None):
    """fn(lib) raises the same exception type in both; returns (ember message, torch message)."""
    with pytest.raises(Exception) as torch_error:
        fn(torch)
    with pytest.raises(Exception) as ember_error:
        fn(ember)
    assert type(ember_error.value) is type(torch_error.value), (ember_error.value, torch_error.value)
    if error is not None:
        assert isinstance(ember_error.value, error)
    return str(ember_error.value), str(torch_error.value)


def shared_model(lib):
    """A model with a submodule and a parameter reachable under two names."""
    nn = lib.nn
    model = nn.Module()
    model.encoder = nn.Sequential(nn.Linear(3, 4), nn.ReLU())
    model.decoder = nn.Linear(4, 3)
    model.tied = model.encoder  # the same module twice
    model.scale = nn.Parameter(lib.ones(2))
    model.decoder.extra = model.scale  # the same parameter twice
    model.register_buffer("steps", lib.zeros(1))
    model.register_buffer("cache", lib.zeros(2), persistent=False)
    return model


def names(iterable):
    return [name for name, _ in iterable]


# ---------------------------------------------------------------- registration and traversal


def test_attribute_assignment_registers():
    def run(lib):
        m = lib.nn.Module()
        m.weight = lib.nn.Parameter(lib.zeros(2))
        m.layer = lib.nn.Linear(2, 2)
        m.plain = lib.zeros(1)  # a plain tensor is an attribute, not a buffer
        m.register_buffer("buf", lib.ones(1))
        m.buf = lib.zeros(3)  # re-assigning a buffer keeps it a buffer
        return (list(m._parameters), list(m._modules), list(m._buffers), tuple(m.buf.shape), "plain" in m.__dict__)

    both(run)


def test_reassigning_registered_names():
    def run(lib):
        m = lib.nn.Module()
        m.x = lib.nn.Parameter(lib.zeros(2))
        m.x = None  # a parameter slot set to None stays registered as None
        m.layer = lib.nn.Linear(1, 1)
        m.layer = None
        del m.x
        return list(m._parameters), list(m._modules), m.layer

    both(run)


def test_assigning_wrong_types_errors():
    raises_both(lambda lib: setattr(_with_param(lib), "w", lib.zeros(2)), TypeError)
    raises_both(lambda lib: setattr(_with_linear(lib), "layer", 3), TypeError)
    message, _ = raises_both(lambda lib: setattr(_with_param(lib), "w", 3), TypeError)
    assert "torch.nn.Parameter" in message or "Parameter" in message


def _with_param(lib):
    m = lib.nn.Module()
    m.w = lib.nn.Parameter(lib.zeros(2))
    return m


def _with_linear(lib):
    m = lib.nn.Module()
    m.layer = lib.nn.Linear(1, 1)
    return m


def test_traversal_with_shared_members():
    def run(lib):
        model = shared_model(lib)
        return (
            names(model.named_parameters()),
            names(model.named_parameters(remove_duplicate=False)),
            names(model.named_parameters(prefix="root", recurse=False)),
            names(model.named_buffers()),
            names(model.named_buffers(prefix="p", recurse=False)),
            names(model.named_children()),
            names(model.named_modules()),
            names(model.named_modules(remove_duplicate=False)),
            names(model.named_modules(prefix="m")),
            len(list(model.parameters())),
            len(list(model.modules())),
            len(list(model.children())),
            len(list(model.buffers())),
            [type(c).__name__ for c in model.children()],
        )

    both(run)


def test_state_dict_keys_order_and_persistence():
    def run(lib):
        model = shared_model(lib)
        state = model.state_dict()
        kept = model.state_dict(keep_vars=True)
        prefixed = model.state_dict(prefix="net.")
        return (list(state), [v.requires_grad for v in state.values()], [v.requires_grad for v in kept.values()],
                list(prefixed), type(state).__name__, state._metadata[""]["version"] if hasattr(state, "_metadata")
                else None)

    both(run)


def test_state_dict_is_detached_and_shares_storage():
    m = ember.nn.Linear(2, 2)
    state = m.state_dict()
    assert not state["weight"].requires_grad
    state["weight"].fill_(3.0)
    assert float(m.weight[0, 0]) == 3.0
    assert m.state_dict(keep_vars=True)["weight"] is m.weight


def test_load_state_dict_strict_and_missing_keys():
    def run(lib):
        model = lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.BatchNorm1d(3))
        state = {k: v.clone() for k, v in model.state_dict().items()}
        del state["0.bias"]
        state["extra.weight"] = lib.zeros(1)
        result = model.load_state_dict(state, strict=False)
        return result.missing_keys, result.unexpected_keys, repr(result), tuple(result)

    both(run)
    message, torch_message = raises_both(lambda lib: lib.nn.Linear(2, 3).load_state_dict({"weight": lib.zeros(3, 2)}),
                                         RuntimeError)
    assert message == torch_message


def test_load_state_dict_all_keys_matched_repr():
    both(lambda lib: repr(lib.nn.Linear(2, 3).load_state_dict(lib.nn.Linear(2, 3).state_dict())))


def test_load_state_dict_size_mismatch_message():
    message, torch_message = raises_both(
        lambda lib: lib.nn.Linear(2, 3).load_state_dict({"weight": lib.zeros(4, 2), "bias": lib.zeros(3)}),
        RuntimeError)
    assert message.replace("ember.Size", "torch.Size") == torch_message
    assert "Size([4, 2])" in message and "Size([3, 2])" in message


def test_load_state_dict_copies_values_and_assign():
    source = ember.nn.Linear(2, 3)
    target = ember.nn.Linear(2, 3)
    weight_before = target.weight
    target.load_state_dict(source.state_dict())
    assert target.weight is weight_before
    np.testing.assert_array_equal(target.weight.detach().numpy(), source.weight.detach().numpy())
    fresh = {"weight": ember.ones(3, 2, dtype=ember.float64), "bias": ember.zeros(3, dtype=ember.float64)}
    target.load_state_dict(fresh)
    assert target.weight.dtype == ember.float32  # copied into the existing float32 parameter

    def assigned(lib):
        m = lib.nn.Linear(2, 3)
        m.load_state_dict({"weight": lib.ones(3, 2, dtype=lib.float64), "bias": lib.zeros(3, dtype=lib.float64)},
                          assign=True)
        return (type(m.weight).__name__, str(m.weight.dtype).split(".")[-1], m.weight.requires_grad)

    both(assigned)


def test_load_state_dict_batchnorm_without_num_batches_tracked():
    def run(lib):
        bn = lib.nn.BatchNorm1d(3)
        state = bn.state_dict()
        del state["num_batches_tracked"]
        return tuple(bn.load_state_dict(state, strict=False))

    both(run)


def test_registration_errors():
    def module(lib):
        m = lib.nn.Module()
        m.w = lib.nn.Parameter(lib.zeros(1))
        return m

    cases = [
        lambda lib: module(lib).register_buffer("a.b", lib.zeros(1)),
        lambda lib: module(lib).register_buffer("", lib.zeros(1)),
        lambda lib: module(lib).register_buffer("w", lib.zeros(1)),
        lambda lib: module(lib).register_buffer("x", 3),
        lambda lib: module(lib).register_buffer(3, lib.zeros(1)),
        lambda lib: module(lib).register_parameter("a.b", lib.nn.Parameter(lib.zeros(1))),
        lambda lib: module(lib).register_parameter("x", lib.zeros(1)),
        lambda lib: module(lib).register_parameter("", None),
        lambda lib: module(lib).add_module("a.b", lib.nn.ReLU()),
        lambda lib: module(lib).add_module("w", lib.nn.ReLU()),
        lambda lib: module(lib).add_module("x", 3),
        lambda lib: module(lib).register_module("", lib.nn.ReLU()),
        lambda lib: module(lib).register_parameter("training", None),
    ]
    for case in cases:
        message, torch_message = raises_both(case)
        assert message.replace("ember.", "torch.") == torch_message


def test_get_submodule_parameter_buffer():
    def run(lib):
        model = shared_model(lib)
        return (type(model.get_submodule("encoder.0")).__name__, tuple(model.get_parameter("encoder.0.bias").shape),
                tuple(model.get_buffer("steps").shape), model.get_submodule("") is model)

    both(run)
    raises_both(lambda lib: shared_model(lib).get_submodule("encoder.5"), AttributeError)
    raises_both(lambda lib: shared_model(lib).get_parameter("encoder.0.nope"), AttributeError)
    raises_both(lambda lib: shared_model(lib).get_parameter("steps"), AttributeError)
    raises_both(lambda lib: shared_model(lib).get_buffer("scale"), AttributeError)
    raises_both(lambda lib: shared_model(lib).get_submodule("scale"), AttributeError)


def test_apply_visits_children_first():
    def run(lib):
        seen = []
        shared_model(lib).apply(lambda m: seen.append(type(m).__name__))
        return seen

    both(run)


def test_dtype_conversions():
    def run(lib):
        model = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.BatchNorm1d(2))
        out = []
        for convert in ("double", "half", "float", "bfloat16"):
            getattr(model, convert)()
            out.append([str(t.dtype).split(".")[-1] for t in model.state_dict().values()])
        model.to(lib.float64)
        out.append([str(t.dtype).split(".")[-1] for t in model.state_dict().values()])
        model.to("cpu", dtype=lib.float16)
        out.append([str(t.dtype).split(".")[-1] for t in model.state_dict().values()])
        model.to(lib.zeros(1, dtype=lib.float32))
        out.append([str(t.dtype).split(".")[-1] for t in model.state_dict().values()])
        model.type(lib.float64)
        out.append(str(model[0].weight.dtype).split(".")[-1])
        return out

    both(run)


def test_to_keeps_parameter_identity_and_grad():
    model = ember.nn.Linear(2, 2)
    weight = model.weight
    model(ember.ones(1, 2)).sum().backward()
    model.double()
    assert model.weight is weight  # converted in place, like torch's default (no swap)
    assert isinstance(model.weight, ember.nn.Parameter) and model.weight.requires_grad
    assert model.weight.dtype == ember.float64 and model.weight.grad.dtype == ember.float64
    assert model.to(ember.float64) is model


def test_train_eval_propagation_and_requires_grad():
    def run(lib):
        model = shared_model(lib)
        out = [model.training]
        model.eval()
        out.append([m.training for m in model.modules()])
        model.train()
        out.append([m.training for m in model.modules()])
        model.encoder.train(False)
        out.append([m.training for _, m in model.named_modules()])
        assert model.train(True) is model and model.eval() is model
        model.requires_grad_(False)
        out.append([p.requires_grad for p in model.parameters()])
        model.decoder.requires_grad_()
        out.append([p.requires_grad for p in model.parameters()])
        return out

    both(run)
    raises_both(lambda lib: lib.nn.Linear(1, 1).train("yes"), ValueError)


def test_zero_grad():
    def run(lib):
        model = lib.nn.Linear(2, 2)
        model(lib.ones(1, 2)).sum().backward()
        model.zero_grad(set_to_none=False)
        zeros = [float(p.grad.abs().sum()) for p in model.parameters()]
        model.zero_grad()
        return zeros, [p.grad for p in model.parameters()]

    both(run)


# ---------------------------------------------------------------- forward hooks


def test_forward_pre_hooks_and_hooks_order_and_removal():
    def run(lib):
        calls = []
        m = lib.nn.Linear(2, 2)
        h1 = m.register_forward_pre_hook(lambda mod, args: calls.append("pre1"))
        m.register_forward_pre_hook(lambda mod, args: calls.append("pre0"), prepend=True)
        m.register_forward_pre_hook(lambda mod, args, kwargs: calls.append(("prekw", sorted(kwargs))),
                                    with_kwargs=True)
        h4 = m.register_forward_hook(lambda mod, args, out: calls.append(("post", tuple(out.shape))))
        m.register_forward_hook(lambda mod, args, kwargs, out: calls.append("postkw"), with_kwargs=True,
                                prepend=True)
        m(lib.ones(1, 2))
        h1.remove()
        h4.remove()
        h4.remove()  # removing twice is harmless
        m(lib.ones(1, 2))
        return calls

    both(run)


def test_hooks_replace_inputs_and_outputs():
    def run(lib):
        m = lib.nn.Identity()
        m.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
        m.register_forward_pre_hook(lambda mod, args: args[0] + 1)  # a single value is wrapped in a tuple
        m.register_forward_hook(lambda mod, args, out: out * 10)
        k = lib.nn.Identity()
        k.register_forward_pre_hook(lambda mod, args, kwargs: ((args[0] - 1,), kwargs), with_kwargs=True)
        return float(m(lib.ones(1))), float(k(lib.ones(1)))

    both(run)


def test_forward_pre_hook_with_kwargs_bad_return():
    def run(lib):
        m = lib.nn.Identity()
        m.register_forward_pre_hook(lambda mod, args, kwargs: 3, with_kwargs=True)
        m(lib.ones(1))

    raises_both(run, RuntimeError)


def test_always_call_forward_hook_runs_when_forward_raises():
    def run(lib):
        calls = []

        class Broken(lib.nn.Module):
            def forward(self, x):
                raise ValueError("boom")

        m = Broken()
        m.register_forward_hook(lambda mod, args, out: calls.append("normal"))
        m.register_forward_hook(lambda mod, args, out: calls.append(("always", out)), always_call=True)
        with pytest.raises(ValueError, match="boom"):
            m(lib.ones(1))
        return calls

    both(run)


def test_hook_handle_context_manager_and_id():
    def run(lib):
        calls = []
        m = lib.nn.Identity()
        with m.register_forward_hook(lambda *a: calls.append(1)):
            m(lib.ones(1))
        m(lib.ones(1))
        return calls, len(m._forward_hooks)

    both(run)


def test_global_forward_hooks():
    def run(lib):
        calls = []
        handle = lib.nn.modules.module.register_module_forward_hook(lambda m, a, o: calls.append(type(m).__name__))
        try:
            lib.nn.Sequential(lib.nn.ReLU())(lib.ones(1))
        finally:
            handle.remove()
        lib.nn.ReLU()(lib.ones(1))
        return calls

    both(run)


# ---------------------------------------------------------------- backward hooks


def _backward_hook_run(lib, model_builder, x_array, prepend=False):
    torch.manual_seed(0)
    model = model_builder(lib).double()
    records = []

    def backward_hook(name):
        def hook(module, grad_input, grad_output):
            records.append((name, "grad_input", [None if g is None else np.array(g.detach().numpy())
                                                 for g in grad_input]))
            records.append((name, "grad_output", [None if g is None else np.array(g.detach().numpy())
                                                  for g in grad_output]))
        return hook

    def pre_hook(name):
        def hook(module, grad_output):
            records.append((name, "pre", [np.array(g.detach().numpy()) for g in grad_output]))
            return (grad_output[0] * 2,)  # doubles the gradient flowing into this module
        return hook

    return model, records, backward_hook, pre_hook


def _compare_records(actual, expected):
    assert [r[:2] for r in actual] == [r[:2] for r in expected]
    for a, e in zip(actual, expected):
        assert len(a[2]) == len(e[2]), a[:2]
        for x, y in zip(a[2], e[2]):
            assert (x is None) == (y is None), a[:2]
            if x is not None:
                np.testing.assert_allclose(x, y, rtol=1e-10, err_msg=str(a[:2]))


def test_full_backward_hooks_match_torch_values():
    x_array = np.random.default_rng(0).standard_normal((3, 4))

    def build(lib):
        return lib.nn.Sequential(lib.nn.Linear(4, 5), lib.nn.Tanh(), lib.nn.Linear(5, 2))

    results = {}
    torch_model = None
    for lib in (torch, ember):
        model, records, backward_hook, pre_hook = _backward_hook_run(lib, build, x_array)
        if lib is torch:
            torch_model = model
        else:
            copy_state(model, torch_model)
        model[0].register_full_backward_hook(backward_hook("linear0"))
        model[2].register_full_backward_hook(backward_hook("linear2"))
        model.register_full_backward_hook(backward_hook("sequential"))
        model[2].register_full_backward_pre_hook(pre_hook("linear2"))
        x = lib.tensor(x_array).requires_grad_(True)
        model(x).pow(2).sum().backward()
        results[lib.__name__] = (records, x.grad.numpy().copy(), model[0].weight.grad.numpy().copy())
    _compare_records(results["ember"][0], results["torch"][0])
    np.testing.assert_allclose(results["ember"][1], results["torch"][1], rtol=1e-10)
    np.testing.assert_allclose(results["ember"][2], results["torch"][2], rtol=1e-10)


def test_full_backward_hook_input_without_grad_and_hook_replacing_grad_input():
    def run(lib):
        torch.manual_seed(0)
        model = lib.nn.Linear(3, 2).double()
        with lib.no_grad():
            model.weight.copy_(lib.tensor(np.arange(6.0).reshape(2, 3)))
            model.bias.zero_()
        seen = []

        def hook(module, grad_input, grad_output):
            seen.append([g is None for g in grad_input])
            return None

        model.register_full_backward_hook(hook)
        model(lib.ones(2, 3, dtype=lib.float64)).sum().backward()  # the input does not require grad
        replacer = lib.nn.Identity()
        replacer.register_full_backward_hook(lambda m, gi, go: (gi[0] * 3,))
        x = lib.ones(2, dtype=lib.float64, requires_grad=True)
        replacer(x).sum().backward()
        return seen, x.grad.tolist()

    both(run)


def test_backward_pre_hook_prepend_and_removal():
    def run(lib):
        calls = []
        m = lib.nn.Linear(2, 2)
        h = m.register_full_backward_pre_hook(lambda mod, go: calls.append("a"))
        m.register_full_backward_pre_hook(lambda mod, go: calls.append("b"), prepend=True)
        m.register_full_backward_hook(lambda mod, gi, go: calls.append("c"))
        m(lib.ones(1, 2, requires_grad=True)).sum().backward()
        h.remove()
        m(lib.ones(1, 2, requires_grad=True)).sum().backward()
        return calls

    both(run)


# ---------------------------------------------------------------- state_dict and load_state_dict hooks


def test_state_dict_hooks():
    def run(lib):
        calls = []
        m = lib.nn.Sequential(lib.nn.Linear(1, 1))
        m[0].register_state_dict_pre_hook(lambda mod, prefix, keep_vars: calls.append(("pre", prefix, keep_vars)))

        def post(module, state_dict, prefix, local_metadata):
            calls.append(("post", prefix, sorted(state_dict)))
            state_dict[prefix + "added"] = lib.zeros(1)

        m[0].register_state_dict_post_hook(post)
        keys = list(m.state_dict(keep_vars=True))
        return calls, keys

    both(run)


def test_load_state_dict_hooks():
    def run(lib):
        calls = []
        m = lib.nn.Sequential(lib.nn.Linear(1, 1))

        def pre(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
            calls.append(("pre", type(module).__name__, prefix, strict))
            state_dict.pop(prefix + "junk", None)  # a pre hook may fix up the incoming dict

        def post(module, incompatible_keys):
            calls.append(("post", type(module).__name__, list(incompatible_keys.missing_keys),
                          list(incompatible_keys.unexpected_keys)))
            incompatible_keys.missing_keys.clear()  # a post hook may forgive missing keys

        m[0].register_load_state_dict_pre_hook(pre)
        m.register_load_state_dict_post_hook(post)
        state = {"0.weight": lib.ones(1, 1), "0.junk": lib.ones(1)}
        result = m.load_state_dict(state)
        return calls, tuple(result)

    both(run)


# ---------------------------------------------------------------- copying and pickling


def test_deepcopy_and_pickle_round_trip():
    model = shared_model(ember)
    model.eval()
    for clone in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        assert names(clone.named_parameters()) == names(model.named_parameters())
        assert clone.tied is clone.encoder and clone.decoder.extra is clone.scale  # sharing kept
        assert clone.encoder[0].weight is not model.encoder[0].weight
        assert not clone.training
        for (_, a), (_, b) in zip(clone.state_dict().items(), model.state_dict().items()):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
        assert isinstance(clone.scale, ember.nn.Parameter)
        assert repr(clone) == repr(model)
        assert "cache" in dict(clone.named_buffers()) and "cache" not in clone.state_dict()


def test_pickle_keeps_hooks_out_and_works_with_buffers_io():
    model = ember.nn.Linear(2, 2)
    buffer = io.BytesIO()
    pickle.dump(model, buffer)
    buffer.seek(0)
    restored = pickle.load(buffer)
    x = ember.ones(1, 2)
    np.testing.assert_array_equal(restored(x).detach().numpy(), model(x).detach().numpy())


def test_parameter_deepcopy_and_repr():
    def run(lib):
        p = lib.nn.Parameter(lib.tensor([1.0, 2.0]))
        q = copy.deepcopy(p)
        frozen = lib.nn.Parameter(lib.tensor([[1, 2]]), requires_grad=False)
        return (repr(p).replace("torch", "T").replace("ember", "T"), type(q).__name__, q.requires_grad,
                repr(frozen).replace("torch", "T").replace("ember", "T"), p.is_leaf,
                repr(lib.nn.Parameter()).replace("torch", "T").replace("ember", "T"))

    both(run)


# ---------------------------------------------------------------- repr


def test_nested_repr_identical():
    def run(lib):
        nn = lib.nn
        block = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=True))
        model = nn.Sequential(OrderedDict([
            ("stem", nn.Conv2d(1, 3, 5, stride=2, bias=False)),
            ("blocks", nn.ModuleList([copy.deepcopy(block) for _ in range(3)] + [nn.Identity()])),
            ("heads", nn.ModuleDict({"cls": nn.Linear(8, 10), "box": nn.Linear(8, 4, bias=False)})),
            ("pool", nn.AdaptiveAvgPool2d((1, 1))),
            ("drop", nn.Dropout(p=0.25)),
            ("lstm", nn.LSTM(4, 8, num_layers=2, batch_first=True, bidirectional=True)),
            ("attn", nn.MultiheadAttention(8, 2)),
            ("params", nn.ParameterList([nn.Parameter(lib.zeros(2)), nn.Parameter(lib.zeros(2, 3))])),
            ("pdict", nn.ParameterDict({"a": nn.Parameter(lib.zeros(1))})),
            ("empty", nn.Sequential()),
        ]))
        return repr(model)

    both(lambda lib: run(lib).replace("torch.", "LIB.").replace("ember.", "LIB."))


def test_module_list_repeated_blocks_repr_collapses():
    both(lambda lib: repr(lib.nn.ModuleList([lib.nn.Linear(2, 2) for _ in range(4)] + [lib.nn.ReLU()])))


def test_extra_repr_of_custom_module():
    def run(lib):
        class Custom(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.inner = lib.nn.Linear(1, 1)

            def extra_repr(self):
                return "line one\nline two"

        return repr(Custom())

    both(run)


# ---------------------------------------------------------------- containers


def test_sequential_operations():
    def run(lib):
        nn = lib.nn
        seq = nn.Sequential(nn.Linear(1, 2), nn.ReLU(), nn.Linear(2, 3))
        out = [len(seq), type(seq[-1]).__name__, type(seq[1:]).__name__, len(seq[::2]), list(seq[1:]._modules)]
        seq.append(nn.Tanh())
        seq.insert(1, nn.Sigmoid())
        seq.insert(-1, nn.ELU())
        seq.extend([nn.Identity(), nn.Identity()])
        out.append([type(m).__name__ for m in seq])
        out.append(list(seq._modules))
        del seq[0]
        out.append(list(seq._modules))
        popped = seq.pop(1)
        out.append((type(popped).__name__, list(seq._modules)))
        seq[0] = nn.GELU()
        out.append(type(seq[0]).__name__)
        del seq[1:3]
        out.append(list(seq._modules))
        combined = seq + nn.Sequential(nn.Softmax(dim=0))
        out.append([type(m).__name__ for m in combined])
        seq += nn.Sequential(nn.Mish())
        out.append(list(seq._modules))
        out.append(len(seq * 2))
        return out

    both(run)


def test_sequential_errors():
    raises_both(lambda lib: lib.nn.Sequential(lib.nn.ReLU())[3], IndexError)
    raises_both(lambda lib: lib.nn.Sequential(lib.nn.ReLU()).insert(5, lib.nn.ReLU()), IndexError)
    raises_both(lambda lib: lib.nn.Sequential(lib.nn.ReLU()).append(3), TypeError)


def test_sequential_forward_chains():
    model = ember.nn.Sequential(OrderedDict([("twice", ember.nn.Identity()), ("relu", ember.nn.ReLU())]))
    np.testing.assert_array_equal(model(ember.tensor([-1.0, 2.0])).numpy(), [0.0, 2.0])
    assert model.relu is model[1]


def test_module_list_operations():
    def run(lib):
        nn = lib.nn
        layers = nn.ModuleList([nn.Linear(1, 1), nn.ReLU()])
        layers.append(nn.Tanh())
        layers.extend([nn.Sigmoid()])
        layers.insert(0, nn.Identity())
        layers += nn.ModuleList([nn.ELU()])
        out = [[type(m).__name__ for m in layers], list(layers._modules), len(layers[1:3]), type(layers[-1]).__name__]
        del layers[1]
        out.append(list(layers._modules))
        popped = layers.pop(0)
        out.append((type(popped).__name__, list(layers._modules)))
        layers[0] = nn.GELU()
        out.append([type(m).__name__ for m in layers])
        out.append(type(layers + nn.ModuleList([nn.ReLU()])).__name__)
        out.append(names(layers.named_parameters()))
        return out

    both(run)


def test_module_dict_operations():
    def run(lib):
        nn = lib.nn
        d = nn.ModuleDict({"b": nn.ReLU(), "a": nn.Tanh()})
        d["c"] = nn.Linear(1, 1)
        d.update([("d", nn.Identity())])
        d.update(OrderedDict(e=nn.Sigmoid()))
        out = [list(d.keys()), [type(v).__name__ for v in d.values()], "a" in d, len(d)]
        popped = d.pop("a")
        out.append((type(popped).__name__, list(d)))
        del d["b"]
        out.append([k for k, _ in d.items()])
        d.clear()
        out.append(len(d))
        return out

    both(run)


def test_parameter_list_and_dict():
    def run(lib):
        nn = lib.nn
        plist = nn.ParameterList([nn.Parameter(lib.zeros(2)), lib.ones(3)])  # plain tensors become Parameters
        plist.append(nn.Parameter(lib.zeros(1)))
        plist.extend([nn.Parameter(lib.zeros(4))])
        out = [len(plist), [tuple(p.shape) for p in plist], [type(p).__name__ for p in plist],
               names(plist.named_parameters()), type(plist[1:]).__name__ if hasattr(plist[1:], "__len__") else None]
        pdict = nn.ParameterDict({"w": nn.Parameter(lib.zeros(2)), "b": lib.ones(1)})
        pdict["x"] = nn.Parameter(lib.zeros(3))
        pdict.update({"y": nn.Parameter(lib.zeros(1))})
        out += [list(pdict.keys()), names(pdict.named_parameters()), type(pdict["b"]).__name__, "w" in pdict]
        out.append(tuple(pdict.pop("w").shape))
        out.append(list(pdict))
        model = nn.Module()
        model.plist, model.pdict = plist, pdict
        out.append(list(model.state_dict()))
        return out

    both(run)


# ---------------------------------------------------------------- lazy modules


def test_lazy_linear():
    def run(lib):
        lazy = lib.nn.LazyLinear(3)
        out = [type(lazy).__name__, lazy.has_uninitialized_params(), type(lazy.weight).__name__,
               repr(lazy).replace("torch", "T").replace("ember", "T")]
        y = lazy(lib.ones(2, 5))
        out += [type(lazy).__name__, tuple(lazy.weight.shape), tuple(lazy.bias.shape), lazy.in_features,
                tuple(y.shape), type(lazy.weight).__name__, repr(lazy), lazy.has_uninitialized_params()
                if hasattr(lazy, "has_uninitialized_params") else None, len(lazy._forward_pre_hooks)]
        return out

    both(run)


def test_lazy_linear_init_bounds_use_inferred_fan_in():
    ember.manual_seed(0)
    lazy = ember.nn.LazyLinear(200)
    lazy(ember.ones(1, 400))
    weight = lazy.weight.detach().numpy()
    assert np.abs(weight).max() <= 1 / np.sqrt(400) + 1e-7
    assert np.abs(weight).max() > 0.9 / np.sqrt(400)


def test_lazy_linear_load_state_dict_materialises():
    def run(lib):
        lazy = lib.nn.LazyLinear(2)
        lazy.load_state_dict({"weight": lib.ones(2, 4), "bias": lib.zeros(2)})
        return tuple(lazy.weight.shape), lazy(lib.ones(1, 4)).tolist()

    both(run)


# ---------------------------------------------------------------- misc API


def test_getattr_error_message():
    message, torch_message = raises_both(lambda lib: lib.nn.Linear(1, 1).nonexistent, AttributeError)
    assert message == torch_message


def test_dir_lists_members():
    m = shared_model(ember)
    listing = dir(m)
    for name in ("encoder", "scale", "steps", "forward", "state_dict"):
        assert name in listing


def test_extra_state_round_trip():
    def run(lib):
        class WithState(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.value = 1

            def get_extra_state(self):
                return {"value": self.value}

            def set_extra_state(self, state):
                self.value = state["value"]

        source, target = WithState(), WithState()
        source.value = 7
        state = source.state_dict()
        target.load_state_dict(state)
        return list(state), target.value

    both(run)


def test_forward_not_implemented():
    raises_both(lambda lib: lib.nn.Module()(lib.ones(1)), NotImplementedError)


def test_module_kwargs_error():
    raises_both(lambda lib: lib.nn.Module(foo=1), TypeError)
