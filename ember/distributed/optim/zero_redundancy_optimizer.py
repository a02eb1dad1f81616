"""ZeroRedundancyOptimizer: optimizer state sharded over ranks (ZeRO stage 1, torch's API).

Every rank holds all parameters and (after DDP) the same averaged gradients, but only the optimizer state of
the parameters it owns.  Ownership: parameters sorted by size, largest first, each given to the rank with
the fewest elements so far (torch's greedy partition), per parameter group.  step(): the local optimizer
(an `optimizer_class` over the owned parameters only) updates the owned parameters, then every parameter
is broadcast from its owner, all broadcasts in flight at once.  So optimizer memory per rank is about 1/N.
"""

from __future__ import annotations

from ...optim.optimizer import Optimizer
from .. import _process_group as pg
from .._collectives import all_gather_object


class ZeroRedundancyOptimizer(Optimizer):
    r"""Wrap `optimizer_class` so each rank keeps the state of 1/world_size of the parameters.

    Args:
        params: parameters or parameter groups, as for any optimizer.
        optimizer_class: the local optimizer's class (e.g. ``ember.optim.Adam``).
        process_group: the group to shard over (default: the world).
        parameters_as_bucket_view: pack each rank's parameters (per dtype and device) into one flat buffer and
            make them views of it, so step() broadcasts one buffer per rank instead of one per parameter
            (torch's option; the parameters' `.data` then point into the buckets).
        overlap_with_ddp: accepted; ember broadcasts after step.
        **defaults: the local optimizer's options (lr, ...).

    Example::

        >>> optimizer = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=ember.optim.Adam, lr=1e-3)
    """

    def __init__(self, params, optimizer_class, process_group=None, parameters_as_bucket_view: bool = False,
                 overlap_with_ddp: bool = False, **defaults) -> None:
        self._constructing = True
        self._bucket_view = parameters_as_bucket_view
        self._buckets: list = []
        self.process_group = pg.resolve(process_group)
        self.optimizer_class = optimizer_class
        self._local_defaults = defaults
        super().__init__(params, defaults)
        self._constructing = False
        self._partition()

    def add_param_group(self, param_group: dict) -> None:
        super().add_param_group(param_group)
        if not getattr(self, "_constructing", False):
            self._partition()

    def _partition(self) -> None:
        """owner[param] for every parameter, and the local optimizer over this rank's share."""
        size, rank = self.process_group.size(), self.process_group.rank()
        self._owner: dict = {}
        local_groups = []
        for group in self.param_groups:
            loads = [0] * size
            for param in sorted(group["params"], key=lambda p: -p.numel()):
                owner = loads.index(min(loads))
                loads[owner] += param.numel()
                self._owner[param] = owner
            mine = [p for p in group["params"] if self._owner[p] == rank]
            options = {key: value for key, value in group.items() if key != "params"}
            local_groups.append({"params": mine, **options})
        self._local_groups_all = local_groups
        nonempty = [g for g in local_groups if g["params"]]
        self.optim = self.optimizer_class(nonempty, **self._local_defaults) if nonempty else None
        self._local_of = [g for g in local_groups]
        if self._bucket_view:
            self._build_buckets()

    def _build_buckets(self) -> None:
        """parameters_as_bucket_view: one flat tensor per (owner, dtype, device) holding the owner's parameters
        back to back; each parameter's data becomes its slice, so the owner's update writes the bucket."""
        from ... import empty, no_grad

        members: dict = {}
        for group in self.param_groups:
            for param in group["params"]:
                members.setdefault((self._owner[param], param.dtype, param.device), []).append(param)
        self._buckets = []
        with no_grad():
            for (owner, dtype, device), params in members.items():
                flat = empty(sum(p.numel() for p in params), dtype=dtype, device=device)
                offset = 0
                for param in params:
                    view = flat[offset:offset + param.numel()].view(param.shape)
                    view.copy_(param.detach())
                    param.data = view
                    offset += param.numel()
                self._buckets.append((owner, flat))

    def _sync_options(self) -> None:
        """A learning-rate scheduler changes self.param_groups: pass the options on to the local groups."""
        if self.optim is None:
            return
        local = iter(self.optim.param_groups)
        for group, mine in zip(self.param_groups, self._local_of):
            if mine["params"]:
                target = next(local)
                for key, value in group.items():
                    if key != "params":
                        target[key] = value

    def step(self, closure=None):
        loss = None
        if self.optim is not None:
            self._sync_options()
            loss = self.optim.step(closure) if closure is not None else self.optim.step()
        elif closure is not None:
            loss = closure()
        communicator = self.process_group.communicator
        if communicator.size > 1 and self._buckets:
            requests = [communicator.broadcast(flat._data.view("uint8"), owner) for owner, flat in self._buckets]
            pg.poll(requests, "ZeroRedundancyOptimizer: broadcast of parameter buckets", self.process_group.timeout)
            for _, flat in self._buckets:
                flat._storage.version += 1  # the parameters are views of it: one storage, one version
        elif communicator.size > 1:
            requests = []
            for group in self.param_groups:
                for param in group["params"]:
                    requests.append(communicator.broadcast(param._data.reshape(-1).view("uint8"),
                                                           self._owner[param]))
            pg.poll(requests, "ZeroRedundancyOptimizer: broadcast of updated parameters", self.process_group.timeout)
            for group in self.param_groups:
                for param in group["params"]:
                    param._storage.version += 1
        return loss

    def local_state_dict(self) -> dict:
        return self.optim.state_dict() if self.optim is not None else {"state": {}, "param_groups": []}

    def consolidate_state_dict(self, to: int = 0) -> None:
        """Gather every rank's optimizer state onto rank `to` (then state_dict() works there)."""
        everyone = [None] * self.process_group.size()
        all_gather_object(everyone, self.local_state_dict(), group=self.process_group)
        self._all_state_dicts = everyone if self.process_group.rank() == to else None

    def state_dict(self) -> dict:
        """The full optimizer state, keyed as an unsharded optimizer's would be (after consolidate_state_dict)."""
        if getattr(self, "_all_state_dicts", None) is None:
            raise RuntimeError("Optimizer state has not been consolidated on this rank. Please call "
                               "`consolidate_state_dict(to=...)` on all ranks first, passing this rank as `to`")
        position = {id(p): i for i, p in enumerate(p for group in self.param_groups for p in group["params"])}
        state = {}
        for rank, local in enumerate(self._all_state_dicts):
            order = self._owned_by(rank)  # the local optimizer's parameter order on that rank
            for local_index, entry in local["state"].items():
                state[position[id(order[local_index])]] = entry
        groups = []
        start = 0
        for group in self.param_groups:
            packed = {key: value for key, value in group.items() if key != "params"}
            packed["params"] = list(range(start, start + len(group["params"])))
            start += len(group["params"])
            groups.append(packed)
        return {"state": state, "param_groups": groups}

    def _owned_by(self, rank: int) -> list:
        return [p for group in self.param_groups for p in group["params"] if self._owner[p] == rank]

    def load_state_dict(self, state_dict: dict) -> None:
        """Load a full (consolidated) state: each rank keeps the entries of the parameters it owns."""
        flat = [p for group in self.param_groups for p in group["params"]]
        for group, saved in zip(self.param_groups, state_dict["param_groups"]):
            for key, value in saved.items():
                if key != "params":
                    group[key] = value
        if self.optim is None:
            return
        mine = {id(p): i for i, p in enumerate(self._owned_by(self.process_group.rank()))}
        local_state = {mine[id(flat[int(index)])]: entry for index, entry in state_dict["state"].items()
                       if id(flat[int(index)]) in mine}
        local = self.optim.state_dict()
        self._sync_options()
        self.optim.load_state_dict({"state": local_state, "param_groups": local["param_groups"]})

