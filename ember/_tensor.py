"""Tensor: an array, a dtype, a device, and autograd state.

The array is a NumPy ndarray on the CPU (a `MetaArray` placeholder on the meta
device).  Views hold NumPy views of their base's array and share its `Storage`,
whose version counter every in-place op bumps; see NOTE [ In-place ops and views ].
Op methods (add, sum, view, ...) are attached from the op registry in
ember/_ops/_api.py; this file holds only the tensor's own state and protocols.
"""

from __future__ import annotations

import numbers
import sys
import warnings

import numpy as np

from . import _device as _device_module
from . import _dispatch
from . import _dtype as dt
from ._autograd import node as node_module
from ._autograd.grad_mode import state
from ._autograd.hooks import RemovableHandle
from ._autograd.node import SAME_DTYPE, AccumulateGrad
from ._backends import MetaArray, array_module_of, to_device, to_host
from ._backends.sparse_coo import SparseCOOArray
from ._device import CPU, as_device
from ._device import device as Device

__all__ = ["Tensor", "Size"]

SCALAR_NAMES = dt.SCALAR_NAMES


class Size(tuple):
    """torch.Size: a tuple of ints whose repr names it."""

    def __repr__(self) -> str:
        return f"ember.{type(self).__name__}([{', '.join(str(n) for n in self)}])"

    def numel(self) -> int:
        n = 1
        for d in self:
            n *= d
        return n

    def __getitem__(self, item):
        out = tuple.__getitem__(self, item)
        return Size(out) if isinstance(item, slice) else out

    def __add__(self, other):
        return Size(tuple.__add__(self, tuple(other)))

    def __radd__(self, other):
        return Size(tuple(other) + tuple(self))


# torch's channels-last memory formats: the rank each needs and its dense dim order, innermost first
LAST_FORMATS = {"channels_last": (4, (1, 3, 2, 0)), "channels_last_3d": (5, (1, 4, 3, 2, 0))}


def _dense_in_order(array, order) -> bool:
    """Whether the array's strides are dense in `order` (innermost first), size-1 dimensions ignored: torch's
    is_contiguous(memory_format=...) (so a (N, 1, H, W) or (N, C, 1, 1) contiguous array is channels-last)."""
    expected = 1
    for dim in order:
        size = array.shape[dim]
        if size != 1:
            if array.strides[dim] != expected * array.itemsize:
                return False
            expected *= size
    return True


def _user_called_requires_grad() -> bool:
    """Whether the user's code called requires_grad_ itself (not one of ember's transforms making a leaf): the
    frame walk of func/_batching.py, which sees through __torch_function__'s method wrappers."""
    from .func._batching import _user_calls

    return _user_calls(("requires_grad_",))


def _channels_last_contiguous(array) -> bool:
    """torch's channels-last contiguity of a 4-d array (NHWC-dense)."""
    return array.ndim == 4 and _dense_in_order(array, LAST_FORMATS["channels_last"][1])


class Storage:
    """What views share: the root array (for data_ptr), the version counters, and whether it was allocated in
    inference_mode (torch's inference tensors: every tensor on such a storage, views too, reports is_inference();
    a view made in inference_mode of a normal tensor stays normal).  The mark costs one flag read per new storage,
    that is per op result.

    NOTE [ Version counters ]
    `version` counts every write to the memory, whichever tensor made it (ember.compile watches it for writes
    it did not see).  Autograd's version counter is torch's: shared by a tensor, its views and its detach(), but
    `x.data` (and a tensor given new memory by `x.data = other`) gets a counter of its own, so that a write
    through `w.data` is invisible to the checks on a saved `w`.  A tensor's counter is its `_counter`: None for
    the storage's own counter, whose value is `version - detached_writes`, or a `VersionCounter`, whose writes
    also count in `detached_writes`.  Writes go through `Tensor._bump_version`; reads through `Tensor._version`."""

    __slots__ = ("array", "version", "detached_writes", "inference", "__weakref__")

    def __init__(self, array) -> None:
        self.array = array
        self.version = 0
        self.detached_writes = 0
        self.inference = state.inference


class VersionCounter:
    """A version counter of its own (NOTE [ Version counters ]): what `x.data` gets, shared with its views."""

    __slots__ = ("value",)

    def __init__(self, value: int = 0) -> None:
        self.value = value


def counter_version(storage: Storage, counter: VersionCounter | None) -> int:
    """The value of a tensor's autograd version counter (NOTE [ Version counters ])."""
    if counter is None:
        return storage.version - storage.detached_writes
    return counter.value


class UntypedStorage:
    """A minimal torch.UntypedStorage view for sharing checks: data_ptr, nbytes, size."""

    def __init__(self, storage: Storage) -> None:
        self._storage = storage

    def data_ptr(self) -> int:
        array = self._storage.array
        return 0 if isinstance(array, MetaArray) else _address(array)

    def nbytes(self) -> int:
        return self._storage.array.nbytes

    def size(self) -> int:
        return self.nbytes()

    def __len__(self) -> int:
        return self.nbytes()


class Tensor:
    """A multi-dimensional array with autograd, as torch.Tensor."""

    __slots__ = ("_data", "_dtype", "_device", "_storage", "_requires_grad", "_grad_fn", "_base", "_output_nr",
                 "__dict__", "__weakref__")

    # Rarely set state lives in the instance __dict__, with these class defaults.
    _grad = None
    _view_version = 0
    _accumulator = None
    _post_accumulate_hooks = None
    _leaf_hooks = None
    _retains_grad = False
    _retain_site = None  # (node, output_nr) holding this tensor's retain_grad hook
    _is_param = False
    _counter = None  # NOTE [ Version counters ]: None while the tensor uses its storage's own counter
    _qparams = None  # quantization parameters of a quantized tensor (ember/_ops/quantized.py)
    _fw_tangent = None  # the tangent inside a dual level (NOTE [ Forward AD ] in ember/_autograd/forward_ad.py)
    _grad_dtype = SAME_DTYPE  # a leaf's allowed .grad dtype: its own (the default), a dtype, or None (any)

    __array_priority__ = 1000  # numpy defers to our reflected operators

    def __new__(cls, *args, **kwargs):
        """Legacy constructor: Tensor(data) or Tensor(*sizes), default dtype."""
        from ._ops import creation

        return creation.legacy_new(*args, **kwargs)

    # ------------------------------------------------------------ construction
    @staticmethod
    def _make(array, dtype: dt.dtype, device: Device = CPU, storage: Storage | None = None) -> Tensor:
        if device is _CUDA_UNINDEXED:  # device="cuda" means the current cuda device, as torch ('cuda:0')
            device = _device_module.current_cuda_device()
        self = object.__new__(Tensor)
        self._data = array
        self._dtype = dtype
        self._device = device
        self._storage = Storage(array) if storage is None else storage
        self._requires_grad = False
        self._grad_fn = None
        self._base = None
        self._output_nr = 0
        if _dispatch.tracer is not None and storage is None and getattr(array, "base", None) is None:
            _dispatch.note_made(self)  # new memory made during a capture (ember.compile)
        return self

    @staticmethod
    def _make_view(array, dtype: dt.dtype, device: Device, source: Tensor) -> Tensor:
        self = object.__new__(Tensor)
        self._data = array
        self._dtype = dtype
        self._device = device
        self._storage = source._storage
        self._requires_grad = False
        self._grad_fn = None
        self._output_nr = 0
        # (a view of an inference tensor is no view to autograd: torch's has no view metadata)
        self._base = None if source._storage.inference else source if source._base is None else source._base
        counter = source._counter
        if counter is not None:
            self.__dict__["_counter"] = counter
        self._view_version = counter_version(source._storage, counter)
        if not state.enabled and source._requires_grad:  # see _check_inplace
            # torch's view of a tensor that requires grad requires grad, even made in no_grad: a leaf whose
            # gradient goes nowhere (_edge)
            self.__dict__["_no_grad_view"] = True
            self._requires_grad = True
        return self

    def _make_subclass_of(self, cls, requires_grad: bool) -> Tensor:
        """A tensor of class `cls` sharing this one's data (nn.Parameter uses it)."""
        if requires_grad and self._storage.inference and not state.inference:
            raise RuntimeError("Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.")
        out = object.__new__(cls)
        out._data = self._data
        out._dtype = self._dtype
        out._device = self._device
        out._storage = self._storage
        if self._counter is not None:
            out._counter = self._counter
        out._requires_grad = bool(requires_grad)
        out._grad_fn = None
        out._base = None
        out._output_nr = 0
        return out

    @classmethod
    def _make_subclass(cls, subclass, data: Tensor, require_grad: bool = False) -> Tensor:
        return data._make_subclass_of(subclass, require_grad)

    # ------------------------------------------------------------ metadata
    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    def size(self, dim: int | None = None):
        if dim is None:
            return Size(self._data.shape)
        if self._data.ndim == 0:  # unlike most ops, size() does not treat a 0-d tensor as 1-d
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        return self._data.shape[self._wrap_dim(dim)]

    @property
    def dtype(self) -> dt.dtype:
        return self._dtype

    @property
    def device(self) -> Device:
        return self._device

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    ndimension = dim

    def numel(self) -> int:
        return int(self._data.size)

    nelement = numel

    def element_size(self) -> int:
        return self._dtype.itemsize

    @property
    def itemsize(self) -> int:
        return self._dtype.itemsize

    @property
    def nbytes(self) -> int:
        return int(self._data.size) * self._dtype.itemsize

    @property
    def layout(self):
        from . import sparse_coo, strided

        return sparse_coo if type(self._data) is SparseCOOArray else strided

    @property
    def is_cuda(self) -> bool:
        return self._device.type == "cuda"

    @property
    def is_meta(self) -> bool:
        return self._device.type == "meta"

    @property
    def is_cpu(self) -> bool:
        return self._device.type == "cpu"

    @property
    def is_sparse(self) -> bool:
        return type(self._data) is SparseCOOArray  # NOTE [ Sparse COO tensors ] in _ops/sparse_ops.py

    @property
    def is_quantized(self) -> bool:
        return self._dtype.category < 0  # NOTE [ Quantized dtypes ] in _dtype.py

    def get_device(self) -> int:
        return -1 if self._device.type == "cpu" else (self._device.index or 0)

    def is_floating_point(self) -> bool:
        return self._dtype.is_floating_point

    def is_complex(self) -> bool:
        return self._dtype.is_complex

    def is_signed(self) -> bool:
        return self._dtype.is_signed

    def _wrap_dim(self, dim: int) -> int:
        return wrap_dim(dim, self._data.ndim)

    def stride(self, dim: int | None = None):
        if type(self._data) is SparseCOOArray:  # torch reports zeros for a sparse tensor
            strides = (0,) * self._data.ndim
            return strides if dim is None else strides[self._wrap_dim(dim)]
        itemsize = self._dtype.itemsize
        strides = tuple(s // itemsize for s in self._data.strides)
        if self._data.ndim and 0 in self._data.shape:
            strides = _contiguous(self._data.shape)
        return strides if dim is None else strides[self._wrap_dim(dim)]

    def storage_offset(self) -> int:
        if isinstance(self._data, (MetaArray, SparseCOOArray)):
            return 0
        return (_address(self._data) - _address(self._storage.array)) // self._dtype.itemsize

    def data_ptr(self) -> int:
        if type(self._data) is SparseCOOArray:
            raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")
        return 0 if isinstance(self._data, MetaArray) else _address(self._data)

    def untyped_storage(self) -> UntypedStorage:
        return UntypedStorage(self._storage)

    def share_memory_(self) -> Tensor:
        """Move the storage into shared memory, in place: this tensor and its views stay valid and a process this
        tensor is sent to maps the same memory (NOTE [ Shared tensors ] in ember/multiprocessing)."""
        from .multiprocessing import _shared_storage

        return _shared_storage.share_memory_(self)

    def is_shared(self) -> bool:
        from .multiprocessing import _shared_storage

        return _shared_storage.is_shared(self)

    def is_contiguous(self, memory_format=None) -> bool:
        if isinstance(self._data, MetaArray):
            return True
        if type(self._data) is SparseCOOArray:
            return False
        last = LAST_FORMATS.get(getattr(memory_format, "name", None))
        if last is not None:
            return self._data.ndim == last[0] and _dense_in_order(self._data, last[1])
        return self._data.flags.c_contiguous

    def is_set_to(self, other: Tensor) -> bool:
        return (self._storage is other._storage and self.storage_offset() == other.storage_offset()
                and self.shape == other.shape and self.stride() == other.stride())

    @property
    def _version(self) -> int:
        if self._storage.inference:
            raise RuntimeError("Inference tensors do not track version counter.")
        return counter_version(self._storage, self._counter)

    def _counter_value(self) -> int:
        """_version without the inference-tensor error (for the bookkeeping of views)."""
        return counter_version(self._storage, self._counter)

    def _take_storage(self, storage: Storage, array=None) -> None:
        """Make this tensor use other memory (set_, resize_, `.data =`, an out= resized) with its own version
        counter, as torch's: writes through it and through the storage's other users no longer count for each
        other (NOTE [ Version counters ]).  `array`: the tensor's array over it (default: all of it)."""
        if storage is not self._storage and self._counter is None:
            self._counter = VersionCounter(counter_version(self._storage, None))
        self._storage = storage
        self._data = storage.array if array is None else array

    def _bump_version(self) -> None:
        """Record an in-place write through this tensor (NOTE [ Version counters ])."""
        storage = self._storage
        storage.version += 1
        counter = self._counter
        if counter is not None:
            counter.value += 1
            storage.detached_writes += 1

    def _is_view(self) -> bool:
        return self._base is not None

    # ------------------------------------------------------------ autograd state
    @property
    def requires_grad(self) -> bool:
        if self._base is not None:
            self._refresh_view()
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if value and self._grad_fn is None and self._dtype.category < 2:  # torch words the setter's error apart
            raise RuntimeError("only Tensors of floating point and complex dtype can require gradients")
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        transforms = sys.modules.get("ember.func._levels")
        if transforms is not None and transforms.active_transforms()[0] and _user_called_requires_grad():
            raise RuntimeError(
                "You are attempting to call Tensor.requires_grad_() (or perhaps using ember.autograd.functional.* "
                "APIs) inside of a function being transformed by a functorch transform. This is unsupported, please "
                "attempt to use the functorch transforms (e.g. grad, vjp, jacrev, jacfwd, hessian) or call "
                "requires_grad_() outside of a function being transformed instead."
            )
        if self._grad_fn is not None:
            if not requires_grad:
                raise RuntimeError(
                    "you can only change requires_grad flags of leaf variables. If you want to use a computed "
                    "variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach()."
                )
            return self
        if requires_grad and self._dtype.category < 2:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        if requires_grad and self._storage.inference and not state.inference:
            raise RuntimeError("Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.")
        self._requires_grad = bool(requires_grad)
        return self

    @property
    def grad_fn(self):
        if self._base is not None:
            self._refresh_view()
        return self._grad_fn

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def output_nr(self) -> int:
        return self._output_nr

    @property
    def grad(self):
        if self._grad_fn is not None and not self._retains_grad:
            warnings.warn(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute "
                "won't be populated during autograd.backward(). If you indeed want the .grad field to be populated "
                "for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor "
                "by mistake, make sure you access the leaf Tensor instead. See github.com/pytorch/pytorch/pull/30531 "
                "for more information.",
                UserWarning,
                stacklevel=2,
            )
        if _dispatch.tracer is not None:  # ember.compile: a replay reads this call's gradient (Tracer.read_grad)
            read_grad = getattr(_dispatch.tracer, "read_grad", None)
            if read_grad is not None:
                read_grad(self)
        return self._grad

    @grad.setter
    def grad(self, value) -> None:
        if _dispatch.tracer is not None:
            _dispatch.capture_break("setting .grad inside a compiled function: a replay would not")
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(
                    f"assigned grad expected to be a Tensor or None but got grad of type {type(value).__name__}")
            allowed = self._dtype if self._grad_dtype is SAME_DTYPE else self._grad_dtype
            if allowed is not None and value._dtype is not allowed:
                raise RuntimeError(
                    f"attempting to assign a gradient with dtype '{dt.CPP_TYPE_NAMES.get(value._dtype.name)}' to a "
                    f"tensor with grad_dtype '{SCALAR_NAMES[allowed.name]}'. The gradient must match the "
                    "tensor's grad_dtype (defaults to the tensor's dtype). You can set the tensor's grad_dtype "
                    "attribute with a specific dtype, or None to allow any dtype. Set grad_dtype with caution. "
                    "Diverging the dtypes of a tensor and its gradient may break downstream systems that assume they "
                    "match.")
            if value._device.type != self._device.type:
                raise RuntimeError(
                    f"attempting to assign a gradient with device type '{value._device.type}' to a tensor with "
                    f"device type '{self._device.type}'. Please ensure that the gradient and the tensor are on the "
                    "same device")
            if value._device != self._device:
                raise RuntimeError("assigned grad has data located on a different device")
            if value._data.shape != self._data.shape:
                raise RuntimeError(
                    f"attempting to assign a gradient of size '{list(value._data.shape)}' to a tensor of size "
                    f"'{list(self._data.shape)}'. Please ensure that the gradient and the tensor are the same size")
        self._grad = value

    def module_load(self, other: Tensor, assign: bool = False) -> Tensor:
        """How load_state_dict maps a state-dict value onto this parameter or buffer when swapping (torch's
        default: `other.detach()` with assign=True, else `self.copy_(other).detach()`); subclasses override it."""
        if assign:
            return other.detach()
        return self.copy_(other).detach()  # (load_state_dict calls it under no_grad)

    @property
    def grad_dtype(self):
        """The dtype a leaf's .grad must have (its own by default; None: any): the engine casts incoming gradients
        to it, and assigning .grad checks it."""
        if self._grad_fn is not None:
            raise RuntimeError("grad_dtype can only be accessed on leaf tensors.")
        return self._dtype if self._grad_dtype is SAME_DTYPE else self._grad_dtype

    @grad_dtype.setter
    def grad_dtype(self, value) -> None:
        if self._grad_fn is not None:
            raise RuntimeError("grad_dtype can only be set on leaf tensors.")
        if value is not None and not isinstance(value, dt.dtype):
            raise TypeError(f"grad_dtype must be a torch.dtype or None, but got {type(value).__name__}")
        self._grad_dtype = value

    @grad.deleter
    def grad(self) -> None:
        if _dispatch.tracer is not None:
            _dispatch.capture_break("deleting .grad inside a compiled function: a replay would not")
        self._grad = None

    @property
    def data(self) -> Tensor:
        """The same memory outside the graph, as detach(), but with a version counter of its own: writes through
        it do not trip the in-place checks on this tensor's saved copies (NOTE [ Version counters ])."""
        out = self.detach()
        out._counter = VersionCounter()
        return out

    @data.setter
    def data(self, value: Tensor) -> None:
        if not isinstance(value, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(value).__name__}")
        if self._requires_grad and value._dtype.category < 2:
            raise RuntimeError("data set to a tensor that requires gradients must be floating point or complex dtype")
        if _dispatch.tracer is not None:  # a rebinding outside the ops: a replay would not do it
            _dispatch.capture_break("setting .data inside a compiled function (vector_to_parameters)")
        self._take_storage(value._storage, value._data)  # with its own version counter, as torch's
        self._dtype = value._dtype
        self._device = value._device
        if value._qparams is not None or self._qparams is not None:
            self._qparams = value._qparams

    def _edge(self):
        """The (node, output_nr) that gradients for this tensor flow into."""
        grad_fn = self.grad_fn
        if grad_fn is not None:
            return (grad_fn, self._output_nr)
        if "_no_grad_view" in self.__dict__:  # torch's grad_accumulator() is null for it: no gradient is kept
            return (None, 0)
        return (self._grad_accumulator(), 0)

    def _grad_accumulator(self) -> AccumulateGrad:
        accumulator = self._accumulator
        if accumulator is None:
            accumulator = AccumulateGrad(self)
            self._accumulator = accumulator
        return accumulator

    def _refresh_view(self) -> None:
        """See NOTE [ In-place ops and views ]: after an in-place write to the storage, a view's grad_fn is
        regenerated as a strided view of its base's current grad_fn."""
        version = counter_version(self._storage, self._counter)
        if self._view_version == version or not state.enabled:
            return
        self._view_version = version
        base = self._base
        if base._requires_grad:
            from ._ops import view_nodes

            node = view_nodes.as_strided_view_node(base, self)
            self._grad_fn = node
            self._output_nr = 0
            self._requires_grad = True
            if self._retains_grad:
                self._follow_retain_hook()

    def detach(self) -> Tensor:
        """A tensor sharing this one's data and version counter, outside the graph."""
        out = Tensor._make(self._data, self._dtype, self._device, self._storage)
        if self._counter is not None:  # detach shares the version counter (NOTE [ Version counters ])
            out._counter = self._counter
        if self._qparams is not None:  # a quantized tensor stays quantized (NOTE [ Quantized dtypes ])
            out._qparams = self._qparams
        if "_vmap_levels" in self.__dict__:  # under vmap it stays batched (ember/func/_batching.py)
            out.__dict__["_vmap_levels"] = self.__dict__["_vmap_levels"]
        return out

    def detach_(self) -> Tensor:
        if self._base is not None:
            raise RuntimeError(
                "Can't detach views in-place. Use detach() instead. If you are using DistributedDataParallel (DDP) "
                "for training, and gradient_as_bucket_view is set as True, gradients are views of DDP buckets, and "
                "hence detach_() cannot be called on these gradients. To fix this error, please refer to the "
                "Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution."
            )
        self._grad_fn = None
        self._requires_grad = False
        self._output_nr = 0
        return self

    def retain_grad(self) -> None:
        if _dispatch.tracer is not None:  # a replay makes new tensors: it could not retain theirs
            _dispatch.tracer.graph_break("Tensor.retain_grad() inside a compiled function")
        if self.grad_fn is None:
            if not self._requires_grad:
                raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
            return
        if self._retains_grad:
            return
        self._retains_grad = True
        node = self._grad_fn
        if node._retain_hooks is None:
            node._retain_hooks = {}

        def retain(grad, tensor=self):
            grad = grad.detach()
            tensor._grad = grad.clone() if tensor._grad is None else tensor._grad + grad

        node._retain_hooks[self._output_nr] = retain
        self._retain_site = (node, self._output_nr)

    def _follow_retain_hook(self) -> None:
        """This tensor has a new grad_fn (an in-place op, a regenerated view): as torch's, its retain_grad hook
        moves there, so that .grad is the gradient of its current value (its register_hook hooks stay)."""
        node, output_nr = self._retain_site
        new_node = self._grad_fn
        if new_node is node and self._output_nr == output_nr:
            return
        hooks = node._retain_hooks
        hook = hooks.pop(output_nr, None) if hooks else None
        if hook is None or new_node is None:
            return
        if new_node._retain_hooks is None:
            new_node._retain_hooks = {}
        new_node._retain_hooks[self._output_nr] = hook
        self._retain_site = (new_node, self._output_nr)

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    def register_hook(self, hook):
        """hook(grad) -> Tensor or None runs when this tensor's gradient is computed."""
        if _dispatch.tracer is not None:  # a replay would not register it
            _dispatch.tracer.graph_break("Tensor.register_hook() inside a compiled function")
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        grad_fn = self.grad_fn
        if grad_fn is not None:
            return grad_fn._register_tensor_hook(self._output_nr, hook)
        accumulator = self._grad_accumulator()
        return accumulator._register_tensor_hook(0, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """hook(tensor) runs after a leaf's .grad has been accumulated."""
        if _dispatch.tracer is not None:
            _dispatch.tracer.graph_break("Tensor.register_post_accumulate_grad_hook() inside a compiled function")
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        if self._post_accumulate_hooks is None:
            self._post_accumulate_hooks = {}
        handle = RemovableHandle(self._post_accumulate_hooks)
        self._post_accumulate_hooks[handle.id] = hook
        return handle

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None) -> None:
        from ._autograd import functions

        if _dispatch.tracer is not None:
            # an epilogue of the graph (loss.backward() after the ops) is replayed around it, else a break
            handled, _ = _dispatch.run_as_action("backward", Tensor.backward,
                                                 (self, gradient, retain_graph, create_graph, inputs), self)
            if handled:
                return
            _dispatch.tracer.graph_break("Tensor.backward() inside a compiled function", self)
            if _dispatch.tracer is not None:  # explain() records on past a break: not the engine's own ops, and
                saved, _dispatch.tracer = _dispatch.tracer, None  # one break (not autograd.backward()'s again)
                try:
                    functions.backward(self, gradient, retain_graph, create_graph, inputs=inputs)
                finally:
                    _dispatch.tracer = saved
                return
        functions.backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    # ------------------------------------------------------------ in-place results
    def _check_inference_write(self) -> None:
        """torch's inference tensors are written only inside inference_mode (they have no version counter)."""
        if self._storage.inference and not state.inference:
            raise RuntimeError(INFERENCE_INPLACE_MESSAGE)

    def _check_inplace(self) -> None:
        if self._storage.inference and not state.inference:
            raise RuntimeError(INFERENCE_INPLACE_MESSAGE)
        if state.enabled and self._base is not None and "_custom_function_view" in self.__dict__:
            raise RuntimeError(
                f"{self.__dict__['_custom_function_view']} is a view and is being modified inplace. This view was "
                "created inside a custom Function (or because an input was returned as-is) and the autograd logic "
                "to handle view+inplace would override the custom backward associated with the custom Function, "
                "leading to incorrect gradients. This behavior is forbidden. You can fix this by cloning the output "
                "of the custom Function.")
        if state.enabled and self._base is not None and "_no_grad_view" in self.__dict__:
            # torch's CreationMeta::NO_GRAD_MODE: autograd cannot tell what such a write should mean
            raise RuntimeError(
                "A view was created in no_grad mode and is being modified inplace with grad mode enabled. Given "
                "that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by "
                "moving both the view and the inplace either both inside the no_grad block (if you don't want the "
                "inplace to be tracked) or both outside (if you want the inplace to be tracked).")
        if state.enabled and self._requires_grad:
            if self._base is None and self._grad_fn is None:
                raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
            base = self._base
            if base is not None and base._grad_fn is None and base._requires_grad:
                raise RuntimeError(
                    "a view of a leaf Variable that requires grad is being used in an in-place operation."
                )
            if base is not None and "_multi_view" in self.__dict__:  # set by views.split / views.unbind
                from ._ops.views import multi_view_error

                raise multi_view_error(self)

    def _inplace_from(self, result: Tensor, allow_cast: bool = False) -> Tensor:
        """Write `result` into this tensor's memory and make it take over result's place in the graph.

        NOTE [ In-place ops and views ]
        An in-place op is computed out of place (so its backward is the op's own), then its values are
        written into this tensor's array and the storage version is bumped.  Autograd-wise the tensor
        becomes the result.  If the tensor is a view, its base gets a CopySlices node: the base's gradient
        flows to the old base outside the view's region and through the op inside it; other views of the
        storage notice the new version and regenerate their grad_fn from the base (`_refresh_view`).
        """
        self._check_inplace()
        if result._data.shape != self._data.shape:
            raise RuntimeError(
                f"output with shape {list(self._data.shape)} doesn't match the broadcast shape {list(result.shape)}"
            )
        if not allow_cast and not dt.can_cast(result._dtype, self._dtype):
            raise RuntimeError(
                f"result type {SCALAR_NAMES[result._dtype.name]} can't be cast to the desired output type "
                f"{SCALAR_NAMES[self._dtype.name]}"
            )
        if result._grad_fn is not None:
            node_module.keep_original_input(result._grad_fn, self)
        if type(self._data) is SparseCOOArray:  # sparse: swap in the result's entries
            from ._ops.sparse_ops import assign_inplace

            assign_inplace(self, result)
        elif not isinstance(self._data, MetaArray) and result._data is not self._data:
            write_array(self._data, result._data)  # (a compiled kernel may already have written it here)
        self._bump_version()
        if result._grad_fn is not None and state.enabled:
            if self._base is None:
                self._grad_fn = result._grad_fn
                self._output_nr = result._output_nr
                self._requires_grad = True
                if self._retains_grad:
                    self._follow_retain_hook()
            else:
                from ._ops import view_nodes

                view_nodes.rebase_view(self, result)
                if self._base._retains_grad:
                    self._base._follow_retain_hook()
                if self._retains_grad:  # torch regenerates the view's grad_fn at once, and its retain hook moves
                    self._refresh_view()
        if _dispatch.forward_ad is not None:  # self takes result's tangent too
            _dispatch.forward_ad.inplace(self, result)
        if _dispatch.tracer is not None:  # ember.compile: this tensor now stands for result's value
            if result._dtype is not self._dtype:  # (bf16 `h += fp32`: the value kept is the cast, recorded)
                result = result.to(self._dtype)
            _dispatch.tracer.inplace(self, result)
        return self

    # ------------------------------------------------------------ conversion to Python / NumPy
    def item(self):
        if self._data.size != 1:
            raise RuntimeError(
                f"a Tensor with {self._data.size} elements cannot be converted to Scalar"
            )
        self._check_data("item")
        if self._qparams is not None:  # torch reads a quantized tensor's item as its dequantized value
            value = float(self.dequantize()._data.reshape(()))
        else:
            value = self._data.reshape(()).item() if self._dtype is not dt.bfloat16 else float(self._data.reshape(()))
            value = _python_scalar(value, self._dtype)
        tracer = _dispatch.tracer
        if tracer is not None and not (hasattr(tracer, "read_item") and tracer.read_item(self, value)):
            tracer.graph_break("Tensor.item(): a tensor value read into Python", self)  # (ember.compile)
        return value

    def tolist(self):
        self._check_data("tolist")
        if _dispatch.tracer is not None:
            _dispatch.tracer.graph_break("Tensor.tolist(): tensor values read into Python", self)
        if self._dtype is dt.bfloat16:
            return self._data.astype(np.float32).tolist()
        return self._data.tolist()

    def numpy(self, *, force: bool = False) -> np.ndarray:
        self._check_data("numpy")
        if _dispatch.tracer is not None:
            tracer = _dispatch.tracer
            tracer.graph_break("Tensor.numpy(): tensor values leave ember", self)
            tracer.expose(self)  # the array is writable: a write through it is a write the graph never saw
        if self._requires_grad and not force and state.enabled:  # (as torch: allowed under no_grad)
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        return self._data

    def __array__(self, dtype=None, copy=None):
        self._check_data("__array__")
        if _dispatch.tracer is not None:
            tracer = _dispatch.tracer
            tracer.graph_break("Tensor.__array__(): tensor values leave ember", self)
            tracer.expose(self)
        array = self._data
        return array if dtype is None else array.astype(dtype)

    def _check_data(self, what: str) -> None:
        host_read = getattr(_dispatch.forward_ad, "host_read", None)  # vmap's checks (ember/func/_batching.py)
        if host_read is not None:
            host_read(self, what)
        if type(self._data) is SparseCOOArray:
            if what in ("numpy", "__array__"):
                raise TypeError("can't convert Sparse layout tensor to numpy. Use Tensor.to_dense() first.")
            raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")
        if self._device.type != "cpu" and what in ("numpy", "__array__"):
            raise TypeError(
                f"can't convert {self._device.type} device type tensor to numpy. Use Tensor.cpu() to copy the "
                "tensor to host memory first."
            )
        if isinstance(self._data, MetaArray):
            if what == "item":
                raise RuntimeError("Tensor.item() cannot be called on meta tensors")
            raise NotImplementedError("Cannot copy out of meta tensor; no data!")
        if self._dtype.category < 0 and what != "item":  # NOTE [ Quantized dtypes ]: no raw values leave
            if what == "tolist":
                raise RuntimeError("load_scalar: invalid type")
            raise TypeError(f"Got unsupported ScalarType {SCALAR_NAMES[self._dtype.name]}")
        if what == "numpy" and self._dtype in dt.FLOAT8_DTYPES:  # torch has no NumPy type for them
            raise TypeError(f"Got unsupported ScalarType {SCALAR_NAMES[self._dtype.name]}")

    def __bool__(self) -> bool:
        if self._data.size != 1:
            amount = "no values" if self._data.size == 0 else "more than one value"
            raise RuntimeError(f"Boolean value of Tensor with {amount} is ambiguous")
        if _dispatch.tracer is not None:
            _dispatch.tracer.graph_break("data-dependent control flow: Tensor.__bool__ (an `if` on a tensor)", self)
        return bool(self.item())

    def _one_element(self):
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self.item()

    def __float__(self) -> float:
        self._warn_scalar_of_requires_grad()
        return float(self._one_element())

    def __int__(self) -> int:
        return int(self._one_element())

    def __complex__(self) -> complex:
        self._warn_scalar_of_requires_grad()
        return complex(self._one_element())

    _warned_scalar_of_requires_grad = False

    def _warn_scalar_of_requires_grad(self) -> None:
        """torch's warn-once from float() / complex() (not int(), bool() or item()) of a tensor that requires
        grad, e.g. `float(loss)` in a training loop; every time under torch.set_warn_always(True)."""
        from ._autograd.grad_mode import is_grad_enabled

        # torch checks grad mode too: no warning under no_grad (LBFGS's `float(closure())` in its no-grad step)
        if not self.requires_grad or not is_grad_enabled():
            return
        from ._ops._api import _user_stacklevel
        from ._ops.top_level_functions import _WarnAlways

        if Tensor._warned_scalar_of_requires_grad and not _WarnAlways.enabled:
            return
        Tensor._warned_scalar_of_requires_grad = True
        import warnings

        warnings.warn("Converting a tensor with requires_grad=True to a scalar may lead to unexpected behavior.\n"
                      "Consider using tensor.detach() first.", UserWarning, stacklevel=_user_stacklevel())

    def __index__(self) -> int:
        if self._dtype.category != 1 or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __reversed__(self):
        """reversed(t): torch's gives the tensor flipped along dim 0 (a 0-d tensor as it is)."""
        return self if self._data.ndim == 0 else self.flip(0)

    def __hash__(self) -> int:
        return id(self)

    def __contains__(self, element) -> bool:
        return bool((self == element).any().item())

    def __repr__(self, *, tensor_contents=None) -> str:
        from ._tensor_str import tensor_repr

        if self._qparams is not None:
            from ._ops.quantized import quantized_repr

            return quantized_repr(self)
        if type(self._data) is SparseCOOArray:
            from ._ops.sparse_ops import sparse_repr

            return sparse_repr(self)
        grad_fn = self.grad_fn
        values = None if isinstance(self._data, MetaArray) else to_host(self._data)
        # torch prints a Parameter as "Parameter containing:\n" + the tensor's own repr (indented as a tensor)
        heading = "Parameter containing:\n" if self._is_param else ""
        return heading + tensor_repr(
            values,
            shape=tuple(self._data.shape),
            dtype_name=self._dtype.name,
            default_dtype_name=dt.get_default_dtype().name,
            device=None if self._device.type == "cpu" else str(self._device),
            requires_grad=self._requires_grad and grad_fn is None,
            grad_fn_name=grad_fn.name() if grad_fn is not None else None,
            tangent=self._tangent_repr(),
        )

    def _tangent_repr(self) -> str | None:
        """A dual tensor (forward AD) prints its tangent, as torch's."""
        forward_ad = _dispatch.forward_ad
        tangent = None if forward_ad is None else forward_ad.tangent_of(self)
        return None if tangent is None else repr(tangent)

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        if self._data.ndim == 0 and not isinstance(self._data, MetaArray):
            return format(self.item(), spec)
        return object.__format__(self, spec)

    def __dir__(self):
        return sorted(set(dir(type(self))) | set(self.__dict__))

    # ------------------------------------------------------------ copying and pickling
    def __deepcopy__(self, memo):
        if not self.is_leaf:
            raise RuntimeError(
                "Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol at the "
                "moment.  If you were attempting to deepcopy a module, this may be because of a torch.nn.utils."
                "weight_norm usage, see https://github.com/pytorch/pytorch/pull/103001"
            )
        if id(self) in memo:
            return memo[id(self)]
        data = self._data if isinstance(self._data, MetaArray) else self._data.copy()
        out = Tensor._make(data, self._dtype, self._device)
        if self._qparams is not None:
            out._qparams = self._qparams
        if type(self) is not Tensor:
            out = out._make_subclass_of(type(self), self._requires_grad)
        out._requires_grad = self._requires_grad
        if self._grad is not None:
            out._grad = self._grad.__deepcopy__(memo)
        for key, value in self.__dict__.items():
            if not key.startswith("_"):
                import copy

                setattr(out, key, copy.deepcopy(value, memo))
        memo[id(self)] = out
        return out

    def __reduce_ex__(self, protocol):
        if type(self._data) is SparseCOOArray:
            from ._ops.sparse_ops import rebuild_sparse

            array = self._data
            return (rebuild_sparse, (array.indices, array.values, array.shape, array.coalesced, self._requires_grad))
        data = self._data if isinstance(self._data, MetaArray) else np.ascontiguousarray(to_host(self._data))
        args = (data, self._dtype.name, str(self._device), self._requires_grad, type(self))
        if self._qparams is not None:
            args += (self._qparams,)
        return (_rebuild_tensor, args)

    def __setstate__(self, state_dict) -> None:
        pass


def _rebuild_tensor(data, dtype_name, device, requires_grad, cls=None, qparams=None):
    device = as_device(device)
    if device.type == "cuda":  # pickled as host values; they go back to the device
        data = to_device(data, device)
    tensor = Tensor._make(data, dt._dtype_by_name(dtype_name), device)
    if qparams is not None:
        tensor._qparams = qparams
    if cls is not None and cls is not Tensor:
        return tensor._make_subclass_of(cls, requires_grad)
    tensor._requires_grad = requires_grad
    return tensor


INFERENCE_INPLACE_MESSAGE = (
    "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a clone to get a normal "
    "tensor before doing inplace update.See https://github.com/pytorch/rfcs/pull/17 for more details.")


def _python_scalar(value, dtype: dt.dtype):
    if dtype is dt.bool_:
        return bool(value)
    if dtype.category == 1:
        return int(value)
    if dtype.category == 2:
        return float(value)
    return complex(value)


def _address(array) -> int:
    interface = getattr(array, "__cuda_array_interface__", None)  # device arrays (CuPy, emulated cuda)
    if interface is None:
        interface = array.__array_interface__
    return interface["data"][0]


def _contiguous(shape) -> tuple:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def wrap_dim(dim: int, ndim: int) -> int:
    """Normalise a possibly negative dim, with torch's IndexError for out-of-range dims."""
    low, high = (-1, 0) if ndim == 0 else (-ndim, ndim - 1)
    if not isinstance(dim, numbers.Integral):
        raise TypeError(f"dim must be an int, got {type(dim).__name__}")
    if dim < low or dim > high:
        raise IndexError(f"Dimension out of range (expected to be in range of [{low}, {high}], but got {dim})")
    return dim + ndim if dim < 0 and ndim else (0 if ndim == 0 else dim)


def write_array(target, values) -> None:
    """target[...] = values, with torch's error for writing into an expanded (overlapping) tensor."""
    copyto = np.copyto if type(target) is np.ndarray else array_module_of(target).copyto
    try:
        copyto(target, values, casting="unsafe")
    except ValueError as error:
        if not target.flags.writeable:
            raise RuntimeError(
                "unsupported operation: more than one element of the written-to tensor refers to a single memory "
                "location. Please clone() the tensor before performing the operation."
            ) from error
        raise


def zeros_for(shape, dtype: dt.dtype, device: Device) -> Tensor:
    if device.type == "meta":
        return Tensor._make(MetaArray(shape, dtype.np_dtype), dtype, device)
    xp = _dispatch.device_module(device)
    return Tensor._make(xp.zeros(shape, dtype.np_dtype), dtype, device)


_CUDA_UNINDEXED = Device("cuda")
_dispatch.Tensor = Tensor
node_module.tensor_factory = Tensor._make
node_module.counter_version = counter_version
