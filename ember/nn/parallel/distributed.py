"""DistributedDataParallel: one model replica per rank, gradients averaged by bucketed, overlapped all-reduces.

How a step flows (torch's Reducer, in Python):

- Construction: check that every rank has the same parameter shapes (one all_gather_object), broadcast
  parameters and buffers from rank 0, and lay the parameters that require grad into buckets: reverse
  registration order (roughly the order backward produces their gradients), one dtype per bucket, the first
  bucket capped at 1 MiB and the others at `bucket_cap_mb` (torch's defaults); a parameter at least as large
  as the cap gets a bucket of its own (_build_buckets).  Each bucket is one flat array; a
  post-accumulate-grad hook is registered on every parameter, and the parameters' AccumulateGrad nodes run
  as soon as they are ready (NOTE [ Gradients as soon as they are ready ]).
- Backward: when a parameter's gradient is accumulated, its hook copies it into its bucket slice (unless
  the gradient already *is* that slice: gradient_as_bucket_view) divided by the world size.  When a bucket
  has all its gradients it is all-reduced with a non-blocking MPI_Iallreduce while backward goes on.
  Buckets are launched strictly in bucket order, so every rank issues the same collectives in the same
  order even when gradients arrive in a different order (MPI requires that).  Each hook, and a pre-hook put
  on every autograd node of the pass at forward, tests the in-flight requests, which is what makes MPI
  progress them during backward (_progress); EMBER_DDP_PROGRESS_THREAD=1 adds a background thread that does
  the same during long matmuls.
- End of backward: the first hook of a pass queues a callback on the autograd engine
  (`ember._autograd.engine.after_backward`, torch's `Variable._execution_engine.queue_callback`); the
  engine runs it when the whole backward has finished.  It launches what is left, waits for every bucket
  (against the process group timeout), and writes the averaged gradients back into `param.grad` (or
  leaves `param.grad` as a view of the bucket: gradient_as_bucket_view).
- find_unused_parameters=True: after forward, the autograd graph is walked from the outputs; parameters
  not reached are marked ready with zero gradients at the start of backward, and a small all-reduce of a
  used-map leaves the `.grad` of parameters unused on every rank untouched, as torch does.
  Without it, a parameter that got no gradient makes the end of backward raise, naming it.
- no_sync(): hooks do nothing; gradients accumulate locally and are reduced by the first backward after.
"""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager

from ..._autograd import engine
from ..._autograd.grad_mode import state as grad_state
from ..._autograd.node import AccumulateGrad
from ..._backends import numpy as np
from ..._tensor import Tensor
from ...distributed import _process_group as pg
from ...distributed._collectives import all_gather_object
from ..modules.module import Module

_FIRST_BUCKET_BYTES = 1024 * 1024
# NOTE [ Gradients as soon as they are ready ]
# The engine runs ready nodes newest-first by sequence number, and a parameter's AccumulateGrad node is
# created long before the forward ops, so by default every gradient hook fires only at the very end of
# backward, after all the matmuls: no bucket could start early.  torch gives AccumulateGrad the largest
# sequence number (UINT64_MAX) so a leaf's gradient is accumulated the moment it is ready; DDP does the same
# for its parameters' accumulators (see _prioritise_accumulators).
_ACCUMULATE_FIRST = 2 ** 63 - 1


class _Bucket:
    def __init__(self, indices: list[int], params: list, dtype) -> None:
        self.indices = indices
        self.offsets = []
        total = 0
        for index in indices:
            self.offsets.append(total)
            total += params[index].numel()
        self.flat = np.zeros(total, dtype=dtype.np_dtype)
        self.pending = len(indices)
        self.request = None

    def view(self, position: int, shape):
        start = self.offsets[position]
        size = 1
        for n in shape:
            size *= n
        return self.flat[start:start + size].reshape(shape)


def _output_tensors(value, found: list) -> list:
    if isinstance(value, Tensor):
        found.append(value)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _output_tensors(item, found)
    elif isinstance(value, dict):
        for item in value.values():
            _output_tensors(item, found)
    return found


def _walk_graph(outputs, prehook=None) -> set:
    """ids of the leaf tensors the autograd graph of `outputs` reaches; with `prehook`, also register it on
    every interior node (DDP's progress points: see _progress)."""
    stack = [t.grad_fn for t in _output_tensors(outputs, []) if t.grad_fn is not None]
    seen, leaves = set(), set()
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        if isinstance(node, AccumulateGrad):
            leaves.add(id(node.variable))
            continue
        if prehook is not None:
            node.register_prehook(prehook)
        stack.extend(child for child, _ in node.next_functions if child is not None)
    return leaves


class DistributedDataParallel(Module):
    r"""Data parallelism over the ranks of a process group (torch.nn.parallel.DistributedDataParallel).

    Args:
        module: the model, identical on every rank (rank 0's parameters and buffers are broadcast).
        device_ids, output_device, dim: accepted for torch compatibility (ember runs on the CPU).
        broadcast_buffers: broadcast rank 0's buffers at every forward (default True).
        process_group: the group to average over (default: the world).
        bucket_cap_mb: bucket size in MiB (default 25).
        find_unused_parameters: allow parameters that get no gradient in a step.
        gradient_as_bucket_view: leave ``param.grad`` as a view into the flat bucket (saves a copy).
        static_graph: accepted; ember recomputes nothing per step that static_graph could save.

    Example::

        >>> model = DistributedDataParallel(nn.Linear(10, 10))
        >>> model(x).sum().backward()   # grads averaged over the ranks when backward returns
    """

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0,
                 broadcast_buffers: bool = True, process_group=None, bucket_cap_mb: float | None = None,
                 find_unused_parameters: bool = False, check_reduction: bool = False,
                 gradient_as_bucket_view: bool = False, static_graph: bool = False,
                 delay_all_reduce_named_params=None, param_to_hook_all_reduce=None, mixed_precision=None,
                 device_mesh=None) -> None:
        super().__init__()
        self.module = module
        self.process_group = pg.resolve(process_group)
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.bucket_bytes_cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * 1024 * 1024)
        self._overlap = True  # False: all buckets are launched at the end of backward (bench/distributed.py)
        self._use_progress_thread = os.environ.get("EMBER_DDP_PROGRESS_THREAD", "0") == "1"
        self._progress_interval = float(os.environ.get("EMBER_DDP_PROGRESS_INTERVAL", "1e-4"))
        self._progress_thread = None
        self._mpi_lock = threading.Lock()
        named = [(name, p) for name, p in module.named_parameters() if p.requires_grad]
        self._names = [name for name, _ in named]
        self._params = [p for _, p in named]
        self._verify_shapes()
        self._sync_module_states()
        self._build_buckets()
        self._hooks = [p.register_post_accumulate_grad_hook(self._make_hook(i)) for i, p in enumerate(self._params)]
        self._prioritise_accumulators()
        self._reset()

    # ------------------------------------------------------------------ construction
    def _verify_shapes(self) -> None:
        mine = [(name, tuple(p.shape), p.dtype.name) for name, p in zip(self._names, self._params)]
        everyone = [None] * self.process_group.size()
        all_gather_object(everyone, mine, group=self.process_group)
        for rank, theirs in enumerate(everyone):
            if theirs != everyone[0]:
                difference = next(((a, b) for a, b in zip(everyone[0], theirs) if a != b), None)
                detail = (f"rank {self.process_group.ranks[0]} has {difference[0]} and rank "
                          f"{self.process_group.ranks[rank]} has {difference[1]}" if difference is not None
                          else f"{len(everyone[0])} vs {len(theirs)} parameters")
                raise RuntimeError(f"DistributedDataParallel: the model's parameters differ across ranks: {detail}")

    def _sync_module_states(self) -> None:
        """Broadcast rank 0's parameters and buffers (one non-blocking broadcast each, then one wait)."""
        communicator = self.process_group.communicator
        if communicator.size == 1:
            return
        tensors = list(self.module.parameters()) + [b for b in self.module.buffers() if b is not None]
        requests = [communicator.broadcast(t._data.reshape(-1).view(np.uint8), 0) for t in tensors]
        pg.poll(requests, "DistributedDataParallel: broadcast of rank 0's parameters and buffers",
                self.process_group.timeout)
        for t in tensors:
            t._storage.version += 1

    def _build_buckets(self) -> None:
        """torch's compute_bucket_assignment_by_size, per dtype: reverse registration order; the first bucket
        is capped at 1 MiB (so the first all-reduce starts early in backward), the others at bucket_cap_mb.
        A bucket closes once it reaches its cap, or before a parameter that would take it past the cap; a
        parameter at least as large as the cap it meets gets a bucket of its own (torch instead lets it
        overshoot the open bucket, which can swallow the whole model into the first two buckets)."""
        self._buckets: list[_Bucket] = []
        self._where: list = [None] * len(self._params)  # param index -> (bucket, position)
        open_indices: dict = {}
        open_bytes: dict = {}
        caps: dict = {}

        def close(dtype) -> None:
            indices = open_indices.pop(dtype, None)
            open_bytes.pop(dtype, None)
            if indices:
                self._buckets.append(_Bucket(indices, self._params, dtype))
                caps[dtype] = self.bucket_bytes_cap

        for index in reversed(range(len(self._params))):
            param = self._params[index]
            dtype = param.dtype
            size = param.numel() * dtype.itemsize
            cap = caps.setdefault(dtype, min(_FIRST_BUCKET_BYTES, self.bucket_bytes_cap))
            if size >= cap:  # too large to share: close what is open, then a bucket of its own
                close(dtype)
                open_indices[dtype], open_bytes[dtype] = [index], size
                close(dtype)
                caps[dtype] = self.bucket_bytes_cap
                continue
            if open_indices.get(dtype) and open_bytes[dtype] + size > cap:
                close(dtype)
                cap = caps[dtype]
            open_indices.setdefault(dtype, []).append(index)
            open_bytes[dtype] = open_bytes.get(dtype, 0) + size
            if open_bytes[dtype] >= cap:
                close(dtype)
        for dtype in list(open_indices):
            close(dtype)
        for bucket in self._buckets:
            for position, index in enumerate(bucket.indices):
                self._where[index] = (bucket, position)
        self._grad_views = [Tensor._make(bucket.view(position, tuple(self._params[i].shape)), self._params[i].dtype)
                            for i, (bucket, position) in ((i, self._where[i]) for i in range(len(self._params)))]

    def _prioritise_accumulators(self) -> None:
        """NOTE [ Gradients as soon as they are ready ].  Re-checked at every forward: a parameter can get a
        new accumulator (requires_grad toggled, .data replaced)."""
        for param in self._params:
            accumulator = param._grad_accumulator()
            if accumulator._sequence_nr != _ACCUMULATE_FIRST:
                accumulator._sequence_nr = _ACCUMULATE_FIRST

    # ------------------------------------------------------------------ per step
    def _reset(self) -> None:
        for bucket in self._buckets:
            bucket.pending = len(bucket.indices)
            bucket.request = None
        self._next_bucket = 0
        self._in_flight: list = []  # requests launched and not yet seen complete
        self._backward_started = False
        self._unused: list[int] = []
        self._used = np.zeros(len(self._params), dtype=np.int32)

    def forward(self, *inputs, **kwargs):
        if self.broadcast_buffers and self.process_group.size() > 1:
            buffers = [b for b in self.module.buffers() if b is not None]
            if buffers:
                requests = [self.process_group.communicator.broadcast(b._data.reshape(-1).view(np.uint8), 0)
                            for b in buffers]
                pg.poll(requests, "DistributedDataParallel: buffer broadcast", self.process_group.timeout)
        output = self.module(*inputs, **kwargs)
        if grad_state.enabled and self.require_backward_grad_sync:
            self._reset()
            self._prioritise_accumulators()
            progress = self._node_progress if self._overlap and self.process_group.size() > 1 else None
            if self.find_unused_parameters or progress is not None:
                reached = _walk_graph(output, progress)
                if self.find_unused_parameters:
                    self._unused = [i for i, p in enumerate(self._params) if id(p) not in reached]
        return output

    @contextmanager
    def no_sync(self):
        """Inside, backward accumulates gradients locally without communication; the first backward after it
        reduces the accumulated gradients."""
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous

    def _make_hook(self, index: int):
        def hook(param) -> None:
            if self.require_backward_grad_sync:
                self._gradient_ready(index)

        return hook

    def _start_backward(self) -> None:
        self._backward_started = True
        engine.after_backward.append(self._finish_backward)
        for index in self._unused:  # NOTE: zero gradients for parameters this rank's graph does not reach
            bucket, position = self._where[index]
            bucket.view(position, (self._params[index].numel(),))[...] = 0
            bucket.pending -= 1

    def _gradient_ready(self, index: int) -> None:
        if not self._backward_started:
            self._start_backward()
        param = self._params[index]
        bucket, position = self._where[index]
        view = self._grad_views[index]
        if param._grad is not view:
            view._data[...] = param._grad._data
            if self.gradient_as_bucket_view:
                param._grad = view
        self._used[index] = 1
        bucket.pending -= 1
        if self._overlap:
            self._launch_ready()
        self._progress()

    def _progress(self) -> None:
        """Test the in-flight all-reduces.  Open MPI and MPICH advance a non-blocking collective only inside
        MPI calls, so without these tests a bucket's all-reduce would sit idle until the end-of-backward
        wait.  Called from every gradient hook and, through _node_progress, before every autograd node of
        the pass runs, so the transfers move on between the matmuls of backward."""
        if self._in_flight:
            with self._mpi_lock:
                self._in_flight = [request for request in self._in_flight if not request.test()]

    def _progress_loop(self, stop) -> None:
        while not stop.wait(self._progress_interval):
            self._progress()

    def _start_progress_thread(self) -> None:
        if self._progress_thread is None and self._use_progress_thread:
            stop = threading.Event()
            thread = threading.Thread(target=self._progress_loop, args=(stop,), daemon=True,
                                      name="ember-ddp-progress")
            self._progress_thread = (thread, stop)
            thread.start()

    def _stop_progress_thread(self) -> None:
        if self._progress_thread is not None:
            thread, stop = self._progress_thread
            stop.set()
            thread.join()
            self._progress_thread = None

    def _node_progress(self, grads) -> None:
        if self._in_flight:
            self._progress()

    def _launch(self, bucket: _Bucket) -> None:
        bucket.flat /= self.process_group.size()  # average as torch does: divide, then sum
        with self._mpi_lock:
            bucket.request = self.process_group.communicator.allreduce(bucket.flat, "sum")
            self._in_flight.append(bucket.request)
        self._start_progress_thread()

    def _launch_ready(self) -> None:
        while self._next_bucket < len(self._buckets) and self._buckets[self._next_bucket].pending == 0:
            self._launch(self._buckets[self._next_bucket])
            self._next_bucket += 1

    def _finish_backward(self) -> None:
        if not self._backward_started:
            return
        missing = [self._names[i] for b in self._buckets if b.pending for i in b.indices
                   if not self._used[i] and i not in self._unused]
        if missing:
            self._reset()
            raise RuntimeError(
                "DistributedDataParallel: these parameters received no gradient in this backward pass: "
                f"{missing} on rank {pg.world().rank()}. Pass find_unused_parameters=True to "
                "DistributedDataParallel if some parameters do not take part in producing the loss."
            )
        self._launch_ready()
        self._stop_progress_thread()
        requests = [bucket.request for bucket in self._buckets]
        used = None
        if self.find_unused_parameters:
            used = self._used.copy()
            requests.append(self.process_group.communicator.allreduce(used, "max"))
        pg.poll(requests, "DistributedDataParallel gradient all_reduce", self.process_group.timeout)
        for index, param in enumerate(self._params):
            if used is not None and not used[index]:
                continue  # unused on every rank: .grad stays as it was, as torch
            view = self._grad_views[index]
            if self.gradient_as_bucket_view or param._grad is None:
                param._grad = view if self.gradient_as_bucket_view else view.clone()
            elif param._grad is not view:
                param._grad._data[...] = view._data
                param._grad._storage.version += 1
        self._reset()

    def __getstate__(self):
        raise RuntimeError("DistributedDataParallel is not picklable; save ddp.module.state_dict() instead")
