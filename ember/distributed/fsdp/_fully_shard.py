"""fully_shard: each rank keeps 1/N of every parameter; whole parameters exist only around their use.

NOTE [ FSDP layout ]
Each parameter managed by a `fully_shard`ed module is flattened, padded with zeros to a multiple of the
world size N, and cut into N equal chunks; rank r keeps chunk r as the module's registered Parameter (a 1-D
tensor of ceil(numel / N) elements).  That is FSDP1's flat-shard layout per parameter rather than FSDP2's
DTensor rows: ember has no DTensor, and flat chunks make every shard the same size, so gathers and
reduce-scatters need no per-rank counts.  The optimizer is built on these sharded parameters, so its
state is sharded too.  Padding elements get zero gradients and stay zero under SGD/Adam/AdamW.

The life of a parameter in one step:
- forward pre-hook: all-gather the chunks into the full tensor (`_AllGather`, an autograd Function whose
  output is the unsharded parameter) and put it in `module._parameters` for forward to use;
- forward hook: put the sharded Parameter back; with reshard_after_forward=True free the full data.
  Tensors autograd saves during the module's forward pass through a saved-tensors hook, which stores a
  marker instead of an unsharded parameter and re-gathers it when backward unpacks it (collectives in
  backward happen in the same order on every rank, because every rank runs the same graph);
- backward of `_AllGather`: the full gradient is reduce-scattered (sum, then divided by N: the average,
  as DDP) into the chunk's gradient, which autograd accumulates into the sharded Parameter's .grad;
- end of backward (an autograd-engine callback): free the full data again.
A tensor saved as a *view* of a parameter (not the parameter itself) keeps the full data alive until
backward, which is correct but saves less memory.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..._autograd import engine
from ..._autograd.function import Function
from ..._autograd.grad_mode import state as grad_state
from ..._autograd.graph import saved_tensors_hooks
from ..._backends import numpy as np
from ..._tensor import Storage, Tensor
from ...nn.modules.module import Module
from ...nn.parameter import Parameter
from .. import _process_group as pg


@dataclass(frozen=True)
class MixedPrecisionPolicy:
    """Dtypes for the unsharded parameters (param_dtype), the gradient reduce-scatter (reduce_dtype) and the
    forward output (output_dtype); cast_forward_inputs casts floating inputs to param_dtype."""

    param_dtype: object = None
    reduce_dtype: object = None
    output_dtype: object = None
    cast_forward_inputs: bool = True


class ShardedTensor:
    """One rank's chunk of a flattened, padded tensor (NOTE [ FSDP layout ]), as FSDP's state_dict gives it.

    `local_tensor()` is this rank's chunk; `shape` the full tensor's; elements [offset, offset + length)
    of the flattened full tensor are held here.  `full_tensor()` all-gathers (every rank must call it).
    """

    def __init__(self, local: Tensor, shape, offset: int, length: int, group) -> None:
        self._local = local
        self.shape = tuple(shape)
        self.offset = offset
        self.length = length
        self.group = group
        self.dtype = local.dtype

    def local_tensor(self) -> Tensor:
        return self._local

    to_local = local_tensor

    def numel(self) -> int:
        total = 1
        for n in self.shape:
            total *= n
        return total

    def full_tensor(self) -> Tensor:
        communicator = self.group.communicator
        chunk = self._local._data.reshape(-1)
        full = np.empty(chunk.size * communicator.size, dtype=chunk.dtype)
        pg.poll([communicator.allgather(chunk, full)], "ShardedTensor.full_tensor", self.group.timeout)
        return Tensor._make(full[:self.numel()].reshape(self.shape).copy(), self._local.dtype)

    def __repr__(self) -> str:
        return f"ShardedTensor(shape={list(self.shape)}, local elements [{self.offset}, {self.offset + self.length}))"


class _FSDPParam:
    """One managed parameter: where it lives, its full shape, its chunk, and its gathered form when present."""

    def __init__(self, module: Module, name: str, fqn: str, param: Parameter, group) -> None:
        self.module = module
        self.name = name
        self.fqn = fqn
        self.group = group
        self.shape = tuple(param.shape)
        self.numel = param.numel()
        self.dtype = param.dtype
        size, rank = group.size(), group.rank()
        self.chunk = -(-self.numel // size)  # ceil
        padded = np.zeros(self.chunk * size, dtype=param._data.dtype)
        padded[:self.numel] = param._data.reshape(-1)
        local = padded[rank * self.chunk:(rank + 1) * self.chunk].copy()
        self.sharded = Parameter(Tensor._make(local, param.dtype), requires_grad=param.requires_grad)
        self.sharded._fsdp_param = self
        self.unsharded: Tensor | None = None
        self.freed = False
        self.pending = None  # (request, receive buffer, dtype) of a prefetched all-gather in flight
        self.prefetched = 0  # all-gathers started ahead of need (tests read it)

    @property
    def offset(self) -> int:
        return self.group.rank() * self.chunk

    @property
    def length(self) -> int:
        return max(0, min(self.chunk, self.numel - self.offset))

    def start_gather(self, dtype):
        """Issue the all-gather of the full tensor (cast to `dtype` first) without waiting: (request, buffer)."""
        communicator = self.group.communicator
        chunk = self.sharded._data
        if dtype is not None and dtype.np_dtype != chunk.dtype:
            chunk = chunk.astype(dtype.np_dtype)
        full = np.empty(self.chunk * communicator.size, dtype=chunk.dtype)
        return communicator.allgather(chunk, full), full

    def prefetch(self, dtype) -> None:
        """Start this parameter's all-gather now (FSDP prefetch), if it is not gathered or in flight."""
        if self.pending is None and (self.unsharded is None or self.freed):
            self.pending = (*self.start_gather(dtype), dtype)
            self.prefetched += 1

    def gather_array(self, dtype):
        """The full tensor's array, all-gathered from every rank's chunk (cast to `dtype` first); a prefetched
        gather in flight is waited for instead of issuing another."""
        if self.pending is not None and self.pending[2] == dtype:
            request, full, _ = self.pending
        else:
            self.wait_pending()
            request, full = self.start_gather(dtype)
        self.pending = None
        pg.poll([request], f"FSDP all_gather of {self.fqn}", self.group.timeout)
        return full[:self.numel].reshape(self.shape)

    def wait_pending(self) -> None:
        """Complete (and drop) a prefetched gather nobody used, so no request is left in flight."""
        if self.pending is not None:
            pg.poll([self.pending[0]], f"FSDP all_gather of {self.fqn}", self.group.timeout)
            self.pending = None

    def regather(self, dtype) -> None:
        """Refill a freed unsharded tensor in place (same Tensor object autograd saved)."""
        if self.unsharded is not None and self.freed:
            array = self.gather_array(dtype)
            self.unsharded._data = array
            self.unsharded._storage = Storage(array)
            self.freed = False

    def free(self) -> None:
        if self.unsharded is not None and not self.freed:
            empty = np.empty((0,), dtype=self.unsharded._data.dtype)
            self.unsharded._data = empty
            self.unsharded._storage = Storage(empty)
            self.freed = True


class _AllGather(Function):
    """Forward: the unsharded parameter from the chunks.  Backward: reduce-scatter of its gradient."""

    @staticmethod
    def forward(ctx, shard, fsdp_param, param_dtype, reduce_dtype):
        ctx.fsdp_param = fsdp_param
        ctx.reduce_dtype = reduce_dtype
        dtype = param_dtype if param_dtype is not None else fsdp_param.dtype
        return Tensor._make(fsdp_param.gather_array(dtype), dtype)

    @staticmethod
    def backward(ctx, grad):
        fsdp_param = ctx.fsdp_param
        group = fsdp_param.group
        communicator = group.communicator
        wire = ctx.reduce_dtype.np_dtype if ctx.reduce_dtype is not None else np.dtype(np.float32) \
            if grad._data.dtype.itemsize < 4 else grad._data.dtype
        padded = np.zeros(fsdp_param.chunk * communicator.size, dtype=wire)
        padded[:fsdp_param.numel] = grad._data.reshape(-1)
        chunk = np.empty(fsdp_param.chunk, dtype=wire)
        pg.poll([communicator.reduce_scatter(padded, chunk, "sum")], f"FSDP reduce_scatter of {fsdp_param.fqn}'s "
                "gradient", group.timeout)
        chunk /= communicator.size
        return Tensor._make(chunk.astype(fsdp_param.sharded._data.dtype), fsdp_param.sharded.dtype), None, None, None


class _FSDPState:
    def __init__(self, module: Module, group, reshard_after_forward: bool, policy: MixedPrecisionPolicy) -> None:
        self.module = module
        self.group = group
        self.reshard_after_forward = reshard_after_forward
        self.policy = policy
        self.params: list[_FSDPParam] = []
        self.hooks_context = None
        self.free_queued = False
        self.forward_prefetch: list = []  # FSDP modules whose gathers start when this module's forward starts
        self.backward_prefetch: list = []  # ... when this module's parameters are re-gathered in backward
        for module_name, owner in module.named_modules():
            for name, param in list(owner._parameters.items()):
                if param is None or getattr(param, "_fsdp_param", None) is not None:
                    continue  # already sharded by a nested fully_shard
                fqn = f"{module_name}.{name}" if module_name else name
                managed = _FSDPParam(owner, name, fqn, param, group)
                owner._parameters[name] = managed.sharded
                self.params.append(managed)
        self.by_id = {}

    # ---- forward
    def unshard(self) -> None:
        for managed in self.params:
            if managed.unsharded is None:
                managed.unsharded = _AllGather.apply(managed.sharded, managed, self.policy.param_dtype,
                                                     self.policy.reduce_dtype)
                managed.freed = False
            else:
                managed.regather(self.policy.param_dtype)
            managed.owner_param = managed.unsharded
            managed.module._parameters[managed.name] = managed.unsharded
        self.by_id = {id(m.unsharded): m for m in self.params}

    def prefetch(self) -> None:
        for managed in self.params:
            managed.prefetch(self.policy.param_dtype)

    def pre_forward(self, module, args, kwargs):
        self.unshard()
        for other in self.forward_prefetch:
            other._fsdp_state.prefetch()
        if grad_state.enabled and self.reshard_after_forward:
            self.hooks_context = saved_tensors_hooks(self.pack, self.unpack)
            self.hooks_context.__enter__()
        if self.policy.cast_forward_inputs and self.policy.param_dtype is not None:
            args = tuple(self._cast(a, self.policy.param_dtype) for a in args)
            kwargs = {k: self._cast(v, self.policy.param_dtype) for k, v in kwargs.items()}
        return args, kwargs

    def post_forward(self, module, args, kwargs, output):
        if self.hooks_context is not None:
            self.hooks_context.__exit__(None, None, None)
            self.hooks_context = None
        for managed in self.params:
            managed.module._parameters[managed.name] = managed.sharded
        if grad_state.enabled and not self.free_queued:
            self.free_queued = True
            engine.after_backward.append(self.reshard_after_backward)
        if self.reshard_after_forward or not grad_state.enabled:
            for managed in self.params:
                managed.free()
        if not grad_state.enabled:
            for managed in self.params:
                managed.unsharded = None
        if self.policy.output_dtype is not None:
            output = self._cast(output, self.policy.output_dtype)
        return output

    @staticmethod
    def _cast(value, dtype):
        if isinstance(value, Tensor) and value.is_floating_point():
            return value.to(dtype)
        if isinstance(value, (list, tuple)):
            return type(value)(_FSDPState._cast(v, dtype) for v in value)
        return value

    # ---- saved tensors: NOTE [ FSDP layout ]
    def pack(self, tensor):
        managed = self.by_id.get(id(tensor))
        if managed is not None and managed.unsharded is tensor:
            return (_FSDPState, managed)
        return tensor

    def unpack(self, packed):
        if isinstance(packed, tuple) and len(packed) == 2 and packed[0] is _FSDPState:
            managed = packed[1]
            was_freed = managed.freed
            managed.regather(self.policy.param_dtype)
            if was_freed:  # this module's backward has begun: start the next ones' gathers
                for other in self.backward_prefetch:
                    other._fsdp_state.prefetch()
            return managed.unsharded
        return packed

    def reshard_after_backward(self) -> None:
        self.free_queued = False
        for managed in self.params:
            managed.wait_pending()
            managed.free()
            managed.unsharded = None

    # ---- state dict
    def state_dict_hook(self, module, state_dict, prefix, local_metadata):
        for managed in self.params:
            key = prefix + managed.fqn
            if key in state_dict:
                state_dict[key] = ShardedTensor(state_dict[key], managed.shape, managed.offset, managed.length,
                                                self.group)
        # (in place, returning None: torch refuses a state_dict post-hook that returns something)

    def load_state_dict_hook(self, module, state_dict, prefix, local_metadata, strict, missing, unexpected, errors):
        for managed in self.params:
            key = prefix + managed.fqn
            value = state_dict.get(key)
            if isinstance(value, ShardedTensor):
                state_dict[key] = value.local_tensor()
            elif isinstance(value, Tensor) and tuple(value.shape) == managed.shape:
                flat = np.zeros(managed.chunk * self.group.size(), dtype=value._data.dtype)
                flat[:managed.numel] = value._data.reshape(-1)
                state_dict[key] = Tensor._make(flat[managed.offset:managed.offset + managed.chunk].copy(), value.dtype)


class FSDPModule:
    """Mixed into every module fully_shard was applied to (FSDP2's FSDPModule)."""

    def unshard(self, async_op: bool = False):
        """All-gather this module's parameters ahead of its forward; with async_op, return a handle whose
        wait() completes it (the gathers are in flight meanwhile), as torch's UnshardHandle."""
        state = self._fsdp_state
        if async_op:
            state.prefetch()
            return _UnshardHandle(self)
        state.unshard()
        for managed in state.params:
            managed.module._parameters[managed.name] = managed.sharded
        return None

    def set_modules_to_forward_prefetch(self, modules: list) -> None:
        """Start these FSDP modules' all-gathers when this module's forward starts (torch's explicit forward
        prefetch: typically the next layer or two), so their communication overlaps this module's compute."""
        _check_fsdp_modules(modules)
        self._fsdp_state.forward_prefetch = list(modules)

    def set_modules_to_backward_prefetch(self, modules: list) -> None:
        """Start these FSDP modules' re-gathers when this module's backward starts (typically the previous
        layer), so they are in flight while this module's gradients are computed."""
        _check_fsdp_modules(modules)
        self._fsdp_state.backward_prefetch = list(modules)

    def reshard(self) -> None:
        self._fsdp_state.reshard_after_backward()

    def set_reshard_after_forward(self, reshard_after_forward: bool, recurse: bool = True) -> None:
        for module in self.modules() if recurse else [self]:
            if isinstance(module, FSDPModule):
                module._fsdp_state.reshard_after_forward = reshard_after_forward

    def set_requires_gradient_sync(self, requires_gradient_sync: bool, *, recurse: bool = True) -> None:
        if not requires_gradient_sync:
            raise NotImplementedError("ember's fully_shard always reduce-scatters gradients in backward; "
                                      "gradient accumulation without sync is not implemented")


class _UnshardHandle:
    """unshard(async_op=True)'s result: wait() finishes the gathers and installs the parameters."""

    def __init__(self, module) -> None:
        self._module = module

    def wait(self) -> None:
        if self._module is not None:
            self._module.unshard()
            self._module = None


def _check_fsdp_modules(modules) -> None:
    for module in modules:
        if not isinstance(module, FSDPModule):
            raise ValueError(f"expected FSDPModules (modules fully_shard was applied to), got {type(module).__name__}")


_CLASSES: dict = {}


def fully_shard(module: Module, *, mesh=None, reshard_after_forward: bool = True,
                shard_placement_fn=None, mp_policy: MixedPrecisionPolicy = MixedPrecisionPolicy(),
                offload_policy=None, ignored_params=None) -> Module:
    r"""Shard `module`'s parameters (those not already sharded by a nested fully_shard) over the ranks.

    Apply it to each block first, then to the root: ``for layer in model.layers: fully_shard(layer)``,
    then ``fully_shard(model)``.  Build the optimizer afterwards, on ``model.parameters()`` (the shards).

    Args:
        mesh: a process group to shard over (default: the world); ember has no DeviceMesh.
        reshard_after_forward: free the gathered parameters after forward and re-gather them in backward.
        mp_policy: MixedPrecisionPolicy (param_dtype, reduce_dtype, output_dtype, cast_forward_inputs).
    """
    if isinstance(module, FSDPModule):
        return module
    group = pg.resolve(mesh)
    state = _FSDPState(module, group, reshard_after_forward, mp_policy)
    module._fsdp_state = state
    module.register_forward_pre_hook(state.pre_forward, with_kwargs=True)
    module.register_forward_hook(state.post_forward, with_kwargs=True)
    module.register_state_dict_post_hook(lambda *args: state.state_dict_hook(*args))
    module.register_load_state_dict_pre_hook(state.load_state_dict_hook)
    cls = type(module)
    if cls not in _CLASSES:
        _CLASSES[cls] = type(f"FSDP{cls.__name__}", (FSDPModule, cls), {})
    module.__class__ = _CLASSES[cls]
    return module
