"""Optimizer: param groups with per-group options, per-parameter state, state_dict, hooks (torch.optim.Optimizer).

The state_dict has torch's exact structure, so a state saved by torch (its
tensors converted to ember tensors) loads here and the run continues with the
same numbers:

    {'state': {0: {'step': tensor(10.), 'exp_avg': ..., ...}, ...},
     'param_groups': [{'lr': 0.001, ..., 'params': [0, 1, ...]}, ...]}

Each algorithm subclass gathers a group's tensors into TensorLists and runs
one implementation over them; see NOTE [ One optimizer implementation ] in
_multi_tensor.py.
"""

from __future__ import annotations

import functools
import warnings
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable
from copy import deepcopy
from itertools import chain
from typing import Any

from .. import _dispatch
from .. import _dtype as dt
from .._autograd.grad_mode import is_grad_enabled, set_grad_enabled
from .._autograd.hooks import RemovableHandle
from .._tensor import Tensor
from ._multi_tensor import TensorList

__all__ = ["Optimizer", "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook", "required"]

_global_optimizer_pre_hooks: OrderedDict = OrderedDict()
_global_optimizer_post_hooks: OrderedDict = OrderedDict()

# torch.utils._foreach_utils._get_fused_kernels_supported_devices(), named in torch's fused error message
FUSED_DEVICES = ["mps", "cuda", "xpu", "hpu", "cpu", "mtia", "privateuseone"]


class _RequiredParameter:
    """Marks an optimizer option every param group must give (torch.optim.optimizer.required)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()


def register_optimizer_step_pre_hook(hook: Callable) -> RemovableHandle:
    """A pre hook for every optimizer's step: hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs)."""
    handle = RemovableHandle(_global_optimizer_pre_hooks)
    _global_optimizer_pre_hooks[handle.id] = hook
    return handle


def register_optimizer_step_post_hook(hook: Callable) -> RemovableHandle:
    """A post hook for every optimizer's step: hook(optimizer, args, kwargs) -> None."""
    handle = RemovableHandle(_global_optimizer_post_hooks)
    _global_optimizer_post_hooks[handle.id] = hook
    return handle


# ---------------------------------------------------------------- helpers shared by the algorithms


def get_scalar_dtype(is_fused: bool | None = None):
    """The dtype of 'step' and other scalar state: float64 under a float64 default dtype, else float32."""
    if is_fused:
        return dt.float32
    return dt.float64 if dt.get_default_dtype() is dt.float64 else dt.float32


def to_scalar(value):
    """A 1-element hyperparameter tensor as a 0-d tensor; anything else unchanged (torch's _to_scalar)."""
    if isinstance(value, Tensor) and value.dim() != 0:
        return value.squeeze()
    return value


def value_of(value):
    """A hyperparameter as a Python number: a tensor lr/beta enters the step as torch's Scalar does."""
    return value.item() if isinstance(value, Tensor) else value


def use_grad_for_differentiable(step):
    """Run step() under no_grad, or with grad enabled when the optimizer was built with differentiable=True."""

    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        previous = is_grad_enabled()
        try:
            set_grad_enabled(self.defaults.get("differentiable", False))  # Adafactor, Muon: no such option
            return step(self, *args, **kwargs)
        finally:
            set_grad_enabled(previous)

    return wrapper


def check_fused_flags(optimizer: Optimizer, fused, foreach, differentiable) -> None:
    """torch's constructor checks for `fused` (it is a mode here: the same implementation runs)."""
    if fused:
        if differentiable:
            raise RuntimeError("`fused` does not support `differentiable`")
        if foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
        optimizer._step_supports_amp_scaling = True


def check_fused_param(param: Tensor) -> None:
    if not param.is_floating_point():
        raise RuntimeError(
            "`fused=True` requires all the params to be floating point Tensors of "
            f"supported devices: {FUSED_DEVICES} but {param.dtype} and {param.device.type}"
        )


def real_view(t: Tensor) -> Tensor:
    """torch's optimizers update a complex tensor (param, grad or same-shaped state) through view_as_real: the
    real and imaginary parts as two independent real numbers.  0-d scalar state and real tensors pass as they are."""
    if t.is_complex():
        from .. import view_as_real

        return view_as_real(t)
    return t


def reject_complex(group: dict, name: str) -> None:
    """The RuntimeError of torch's optimizers that have no complex support at all (Adafactor, Muon)."""
    for p in group["params"]:
        if p.grad is not None and p.is_complex():
            raise RuntimeError(f"{name} does not support complex parameters")


def scalar_tensor(value: float, dtype=None, device=None) -> Tensor:
    """A 0-d state tensor ('step', 'mu_product', ...)."""
    from .. import tensor

    return tensor(float(value), dtype=dtype or get_scalar_dtype(), device=device)


class Optimizer:
    r"""Base class for all optimizers.

    Args:
        params (iterable): an iterable of Tensors, of (name, Tensor) pairs, or of dicts
            (parameter groups with their own options).
        defaults (dict): default values of optimization options, used when a group doesn't set them.
    """

    # State entries that are 0-d tensors in current torch but plain numbers in old checkpoints.
    _scalar_state_keys: tuple = ("step",)

    def __init__(self, params, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self._optimizer_step_pre_hooks: OrderedDict = OrderedDict()
        self._optimizer_step_post_hooks: OrderedDict = OrderedDict()
        self._optimizer_state_dict_pre_hooks: OrderedDict = OrderedDict()
        self._optimizer_state_dict_post_hooks: OrderedDict = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks: OrderedDict = OrderedDict()
        self._optimizer_load_state_dict_post_hooks: OrderedDict = OrderedDict()
        if isinstance(params, Tensor):
            from .. import typename

            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or dicts, but got "
                + typename(params)
            )
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    # NOTE [ Step hooks ]
    # torch patches each optimizer class's `step` the first time an instance is built; here every subclass
    # that defines `step` gets it wrapped once, at class creation.  A subclass step that calls super().step()
    # must not run the hooks twice, so the wrapper runs them only for the outermost call.
    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "hooked", False):
            cls.step = Optimizer._hook_step(step)

    @staticmethod
    def _hook_step(step):
        @functools.wraps(step)
        def wrapper(self, *args, **kwargs):
            if self.__dict__.get("_in_hooked_step"):
                return step(self, *args, **kwargs)
            tracer = _dispatch.tracer
            if tracer is not None and getattr(tracer, "owner", None) is not self:
                # a compiled function that calls opt.step() after its ops (a training step): replayed after the
                # graph, eagerly; else a break -- traced, its grads, state and lr would be constants of the
                # graph (only `ember.compile(opt.step)` passes them as inputs and guards the hyperparameters)
                if not kwargs:
                    handled, result = _dispatch.run_as_action("step", wrapper, (self, *args))
                    if handled:
                        return result
                _dispatch.capture_break("optimizer.step() called inside a compiled function (compile "
                                        "optimizer.step itself to capture it)")
            # as torch's profile_hook_step: the hooks see the bound call's whole args, self first, and a pre hook's
            # new args replace them all (self included)
            args = (self, *args)
            for pre_hook in chain(_global_optimizer_pre_hooks.values(), self._optimizer_step_pre_hooks.values()):
                result = pre_hook(self, args, kwargs)
                if result is not None:
                    if isinstance(result, tuple) and len(result) == 2:
                        args, kwargs = result
                    else:
                        raise RuntimeError(
                            f"{step} must return None or a tuple of (new_args, new_kwargs), but got {result}."
                        )
            self._in_hooked_step = True
            try:
                out = step(*args, **kwargs)
            finally:
                self._in_hooked_step = False
            for post_hook in chain(self._optimizer_step_post_hooks.values(), _global_optimizer_post_hooks.values()):
                post_hook(self, args, kwargs)
            return out

        wrapper.hooked = True
        return wrapper

    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        for name in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks", "_optimizer_state_dict_pre_hooks",
                     "_optimizer_state_dict_post_hooks", "_optimizer_load_state_dict_pre_hooks",
                     "_optimizer_load_state_dict_post_hooks"):
            if name not in self.__dict__:
                setattr(self, name, OrderedDict())
        self._fill_group_defaults()  # before the next line: groups get only their optimizer's own options
        self.defaults.setdefault("differentiable", False)

    def _fill_group_defaults(self) -> None:
        """What each torch subclass's __setstate__ does: groups get options missing from an older state,
        and scalar state saved as plain numbers becomes 0-d tensors."""
        for group in self.param_groups:
            for key, default in self.defaults.items():
                if default is not required:
                    group.setdefault(key, default)
            on_device = group.get("capturable", False) or group.get("fused", False)
            for p in group["params"]:
                p_state = self.state.get(p, {})
                for key in self._scalar_state_keys:
                    if key in p_state and not isinstance(p_state[key], Tensor):
                        p_state[key] = scalar_tensor(
                            p_state[key], get_scalar_dtype(group.get("fused")), p.device if on_device else None
                        )

    def __repr__(self) -> str:
        format_string = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            format_string += "\n"
            format_string += f"Parameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    format_string += f"    {key}: {group[key]}\n"
        format_string += ")"
        return format_string

    # ---------------------------------------------------------------- hooks

    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        """hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs), called before step()."""
        handle = RemovableHandle(self._optimizer_step_pre_hooks)
        self._optimizer_step_pre_hooks[handle.id] = hook
        return handle

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        """hook(optimizer, args, kwargs) -> None, called after step()."""
        handle = RemovableHandle(self._optimizer_step_post_hooks)
        self._optimizer_step_post_hooks[handle.id] = hook
        return handle

    @staticmethod
    def _register(hooks: OrderedDict, hook: Callable, prepend: bool) -> RemovableHandle:
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    def register_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """hook(optimizer) -> None, called before state_dict()."""
        return self._register(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """hook(optimizer, state_dict) -> state_dict or None, called on state_dict()'s result."""
        return self._register(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """hook(optimizer, state_dict) -> state_dict or None, called before load_state_dict()."""
        return self._register(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """hook(optimizer) -> None, called after load_state_dict()."""
        return self._register(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    # ---------------------------------------------------------------- state_dict

    def state_dict(self) -> dict[str, Any]:
        """The optimizer state as {'state': {param index: {...}}, 'param_groups': [{..., 'params': [index]}]}.

        State tensors are returned by reference, as torch does (save or clone them to keep a snapshot).
        """
        for pre_hook in self._optimizer_state_dict_pre_hooks.values():
            pre_hook(self)
        param_mappings: dict[int, int] = {}
        start_index = 0

        def pack_group(group: dict[str, Any]) -> dict[str, Any]:
            nonlocal start_index
            packed = {k: v for k, v in group.items() if k != "params"}
            param_mappings.update(
                {id(p): i for i, p in enumerate(group["params"], start_index) if id(p) not in param_mappings}
            )
            packed["params"] = [param_mappings[id(p)] for p in group["params"]]
            start_index += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {
            (param_mappings[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()
        }
        state_dict = {"state": packed_state, "param_groups": param_groups}
        for post_hook in self._optimizer_state_dict_post_hooks.values():
            hook_result = post_hook(self, state_dict)
            if hook_result is not None:
                state_dict = hook_result
        return state_dict

    @staticmethod
    def _process_value_according_to_param_policy(param, value, param_id, param_groups, key=None):
        """A loaded state tensor: 'step' kept as saved (float32 on the param's device under fused/capturable),
        anything else cast to a floating param's dtype and moved to its device."""
        fused = capturable = False
        for group in param_groups:
            if param_id in group["params"]:
                fused = group.get("fused", False)
                capturable = group.get("capturable", False)
                break
        if key == "step":
            if capturable or fused:
                return value.to(dtype=dt.float32, device=param.device)
            return value
        if param.is_floating_point():
            return value.to(dtype=param.dtype, device=param.device)
        return value.to(device=param.device)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a state produced by state_dict() (of an ember or, tensors converted, a torch optimizer)."""
        state_dict = state_dict.copy()
        for pre_hook in self._optimizer_load_state_dict_pre_hooks.values():
            hook_result = pre_hook(self, state_dict)
            if hook_result is not None:
                state_dict = hook_result
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError(
                "loaded state dict contains a parameter group that doesn't match the size of optimizer's group"
            )
        id_map = dict(
            zip(
                chain.from_iterable(g["params"] for g in saved_groups),
                chain.from_iterable(g["params"] for g in groups),
            )
        )

        def cast(param, value, param_id=None, param_groups=None, key=None):
            if isinstance(value, Tensor):
                return Optimizer._process_value_according_to_param_policy(param, value, param_id, param_groups, key)
            if isinstance(value, dict):
                return {
                    k: cast(param, v, param_id=param_id, param_groups=param_groups, key=k) for k, v in value.items()
                }
            if isinstance(value, Iterable) and not isinstance(value, str):
                return type(value)(cast(param, v, param_id=param_id, param_groups=param_groups) for v in value)
            return value

        state: defaultdict = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = cast(param, v, param_id=k, param_groups=state_dict["param_groups"])
            else:
                state[k] = v

        def update_group(group, new_group):
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        param_groups = [update_group(g, ng) for g, ng in zip(groups, saved_groups)]
        self.__setstate__({"state": state, "param_groups": param_groups})
        for post_hook in self._optimizer_load_state_dict_post_hooks.values():
            post_hook(self)

    # ---------------------------------------------------------------- groups, grads, step

    # ------------------------------------------------------------ ember.compile(optimizer.step)
    def _compile_inputs(self) -> list:
        """The tensors a step reads and writes, in a fixed order: each param that has a grad, its grad and its
        state tensors, and tensor hyperparameters.  ember.compile(optimizer.step) takes them as graph inputs, so
        a replay reads this step's grads (new tensors after zero_grad) and writes params and state back."""
        tensors = []
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                tensors += [p, p.grad]
                tensors += [value for _, value in sorted(self.state.get(p, {}).items()) if isinstance(value, Tensor)]
            tensors += [value for _, value in sorted(group.items()) if isinstance(value, Tensor)]
        return tensors

    def _compile_guard(self) -> tuple:
        """What a compiled step was captured for besides its inputs' shapes: the hyperparameters' values (a
        changed lr recompiles, as in torch; a tensor lr does not) and which params have a grad and state."""
        def frozen(value):
            if isinstance(value, Tensor):
                return "tensor"
            if isinstance(value, (list, tuple)):
                return tuple(frozen(v) for v in value)
            return value if isinstance(value, (int, float, bool, str, type(None))) else ("id", id(value))

        layout = []
        for group in self.param_groups:
            layout.append(tuple((k, frozen(v)) for k, v in sorted(group.items()) if k != "params"))
            for p in group["params"]:
                state = self.state.get(p, {})
                layout.append((p.grad is not None, tuple((k, frozen(v)) for k, v in sorted(state.items()))))
        return tuple(layout)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all optimized tensors: to None (default) or to zeros."""
        if _dispatch.tracer is not None and _dispatch.run_as_action("zero_grad", type(self).zero_grad,
                                                                     (self, set_to_none))[0]:
            return  # (inside a compiled training step: replayed around its graph)
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if p.grad.grad_fn is not None:
                        p.grad.detach_()
                    else:
                        p.grad.requires_grad_(False)
                    p.grad.zero_()

    def step(self, closure: Callable | None = None):
        """Perform a single optimization step (closure: reevaluates the model and returns the loss)."""
        raise NotImplementedError

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a param group (a dict with 'params' and any per-group options) to `param_groups`."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but "
                "the ordering of tensors in sets will change between runs. Please use a list instead."
            )
        else:
            param_group["params"] = list(params)
        self._extract_names(param_group)
        for param in param_group["params"]:
            if not isinstance(param, Tensor):
                from .. import typename

                raise TypeError("optimizer can only optimize Tensors, but one of the params is " + typename(param))
            if not self.defaults.get("differentiable", None) and not (param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)
        params = param_group["params"]
        if len(params) != len({id(p) for p in params}):
            warnings.warn(
                "optimizer contains a parameter group with duplicate parameters; "
                "in future, this will cause an error; "
                "see github.com/pytorch/pytorch/issues/40967 for more information",
                stacklevel=3,
            )
        existing: set[int] = set()
        for group in self.param_groups:
            existing.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                current = "with names" if "param_names" in param_group else "without names"
                raise ValueError(
                    "all optimizer param groups should be with/without names. "
                    f"cannot add param group {current} to the optimizer"
                )
        if not existing.isdisjoint(id(p) for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    @staticmethod
    def _extract_names(param_group: dict[str, Any]) -> None:
        """named_parameters() input: split (name, tensor) pairs into 'params' and 'param_names'."""
        tensors, names = [], []
        for param in param_group["params"]:
            if isinstance(param, tuple):
                names.append(param[0])
                tensors.append(param[1])
            else:
                tensors.append(param)
        param_group["params"] = tensors
        if names:
            if len(names) != len(tensors):
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")
            param_group["param_names"] = names

    # ---------------------------------------------------------------- shared by the algorithms

    # whether _update takes sparse gradients (Adagrad); the others raise torch's error, which Adam words apart
    _sparse_grads = False

    @property
    def _sparse_grad_error(self) -> str:
        return f"{type(self).__name__} does not support sparse gradients"

    def _gather(self, group: dict, initialize: Callable, keys: tuple, name: str):
        """The group's params that have a grad, their grads, and each state entry in `keys`, as TensorLists.

        `initialize(param, state, group)` fills an empty state the first time a param is seen.
        """
        params, grads = TensorList(), TensorList()
        states = {key: TensorList() for key in keys}
        for p in group["params"]:
            if p.grad is None:
                continue
            if p.grad.is_sparse and not self._sparse_grads:
                raise RuntimeError(self._sparse_grad_error)
            params.append(real_view(p))
            grads.append(real_view(p.grad))
            state = self.state[p]
            if len(state) == 0:
                if group.get("fused"):
                    check_fused_param(p)
                initialize(p, state, group)
            for key in keys:
                states[key].append(real_view(state[key]))
        return params, grads, states

    @staticmethod
    def _step_tensor(param: Tensor, group: dict) -> Tensor:
        """A new 'step' counter: a 0-d float tensor, on the param's device under capturable/fused."""
        on_device = group.get("capturable", False) or group.get("fused", False)
        return scalar_tensor(0.0, get_scalar_dtype(group.get("fused")), param.device if on_device else None)

    @staticmethod
    def _closure_loss(closure):
        if closure is None:
            return None
        from .._autograd.grad_mode import enable_grad

        with enable_grad():
            return closure()


class GroupwiseOptimizer(Optimizer):
    """The one step() of the vectorised optimizers: for each param group, gather the params that have a grad,
    their grads and the state entries `_keys(group)` as TensorLists, then run `_update` on the whole group."""

    def _keys(self, group) -> tuple:
        raise NotImplementedError

    def _check_group(self, group, params) -> None:
        """Per-algorithm argument checks that need the gathered params (none by default)."""

    # torch's capturable device check: (what the single-tensor / foreach message names, and whether each lists
    # 'xla' among the supported devices)
    _capturable_check = ("params and state_steps", "params and state_steps", True, False)

    def _check_capturable(self, group, params) -> None:
        """capturable=True needs every param on an accelerator (torch's AssertionError on the CPU); ember.compile
        captures the step itself, so the check is skipped there, as under torch.compile."""
        if not group.get("capturable") or not params or all(p.device.type == "cuda" for p in params):
            return
        from ..compiler import is_compiling

        if is_compiling():
            return
        single, multi, single_xla, multi_xla = self._capturable_check
        foreach = bool(group.get("foreach"))
        devices = ["cuda", "xpu", "hpu", "privateuseone"] + (["xla"] if (multi_xla if foreach else single_xla) else [])
        raise AssertionError(
            f"If capturable=True, {multi if foreach else single} must be on supported devices: {devices}."
        )

    @use_grad_for_differentiable
    def step(self, closure=None):
        """Perform a single optimization step."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            params, grads, state = self._gather(group, self._initialize, self._keys(group), type(self).__name__)
            self._check_capturable(group, params)
            self._check_group(group, params)
            if params:
                self._update(group, params, grads, state)
        return loss
