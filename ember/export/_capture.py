"""export(): capture a module's forward with ember.compile's tracer and write the graph as JSON-able data.

The tracer (ember/_compile/tracer.py) records every dispatched op while the module runs once on the example
inputs, in its current train/eval mode and with grad mode off (an inference graph, as torch.export records
ATen ops); `fullgraph=True` turns the first graph break into an error.  A dynamic batch dim is found the
way ember.compile finds one (ember/_compile/symbolic.py): a second capture with the marked dims one larger,
compared node by node, every differing int becoming `Batch(m)` = m * B.  The module's buffers and the
random generator are restored after each capture, so export leaves the module as it found it.

The result (`Program`) is the data a file holds: the JSON description (ops by registry name, params
through _codec) and the tensors (parameters, buffers, constants, example inputs).
"""

from __future__ import annotations

import inspect
import re

from .._autograd.grad_mode import no_grad
from .._compile import symbolic
from .._compile.graph import Value, iter_values
from .._compile.runtime import eliminate_dead_code
from .._compile.tracer import Tracer, flatten_tensors
from .._compile.tracer import Unsupported as _TracerUnsupported
from .._tensor import Tensor
from . import _registry
from ._codec import encode
from ._errors import Unsupported, UserError
from .dynamic_shapes import batch_symbol, dynamic_dims

FORMAT_VERSION = 1


class Program:
    """What export produces and a file stores: `spec` (JSON-able) and `tensors` by role."""

    def __init__(self, spec: dict, state: dict, constants: dict, examples: dict) -> None:
        self.spec = spec
        self.state = state  # target -> Tensor: parameters and buffers
        self.constants = constants  # target -> Tensor: lifted constants
        self.examples = examples  # user input name -> Tensor


# ---------------------------------------------------------------- capture


def _snapshot(mod) -> tuple:
    from .. import random as ember_random

    buffers = [(buffer, buffer._data.copy()) for _, buffer in mod.named_buffers()]
    return buffers, ember_random.get_rng_state()


def _restore(saved: tuple) -> None:
    from .. import random as ember_random

    buffers, rng_state = saved
    for buffer, data in buffers:
        buffer._data[...] = data
    ember_random.set_rng_state(rng_state)


def _trace(mod, args: tuple, kwargs: dict) -> Tracer:
    """One capture of mod(*args, **kwargs) under no_grad; graph breaks raise ember.export.Unsupported."""
    saved = _snapshot(mod)
    tracer = Tracer(fullgraph=True)
    try:
        with no_grad():
            with tracer:
                tracer.bind_inputs(args, kwargs)
                result = mod(*args, **kwargs)
            tracer.finish(result)
    except _TracerUnsupported as error:
        message = str(error).replace("graph break (fullgraph=True)", "graph break")
        raise Unsupported(f"ember.export: cannot export {type(mod).__name__}: {message}") from None
    finally:
        _restore(saved)
    tracer.graph.mutations = tracer.mutations
    return tracer


def _grown_inputs(found: list, symbol: dict, args: tuple, kwargs: dict):
    """The example inputs with every marked dim at a second size (one more, or one less near max)."""
    from .. import cat

    size = symbol["size"]
    other = size + 1
    if symbol["max"] is not None and other > symbol["max"]:
        other = size - 1
        if other < max(2, symbol["min"]):
            raise UserError(f"the range of {symbol['name']} leaves no second size to capture with")
    marked: dict = {}
    for tensor, dim, _, _ in found:
        marked.setdefault(id(tensor), (tensor, set()))[1].add(dim)
    replacement = {}
    with no_grad():
        for key, (tensor, dims) in marked.items():
            grown = tensor
            for dim in sorted(dims):
                if other > size:
                    grown = cat([grown, grown.narrow(dim, 0, other - size)], dim)
                else:
                    grown = grown.narrow(dim, 0, other).contiguous()
            replacement[key] = grown

    from ..func._pytree import tree_map

    def swap(value):
        return replacement.get(id(value), value) if isinstance(value, Tensor) else value

    return tree_map(swap, args), tree_map(swap, kwargs), other


def _external_token(node, roles: dict):
    """How an external compares across the two captures: a parameter/buffer by name, a constant by value."""
    role = roles.get(id(node.tensor))
    if role is not None:
        return ("state", role[1])
    tensor = node.tensor
    return ("constant", tensor._dtype.name, tuple(tensor.shape), tensor._data.tobytes())


def _generalize(grown: Tracer, example: Tracer, sizes: symbolic.Sizes, roles: dict, name: str) -> dict:
    """Mark the example graph's batch-dependent sizes (symbolic.generalize); returns {id(node): merged args}
    for nodes whose literal int arguments depend on the batch (generalize allows but does not keep those)."""
    signatures = []
    for tracer in (grown, example):
        rows, output, mutations = symbolic.signature(tracer.graph)
        rows = [row[:6] + (_external_token(row[0], roles) if row[1] == "external" else row[6],) + row[7:]
                for row in rows]
        signatures.append([rows, output, mutations])
    symbolic_args = {}
    try:
        symbolic.generalize(signatures[0], signatures[1], sizes, symbolic_args=True)
        for old, new in zip(grown.graph.nodes, example.graph.nodes):
            if new.kind == "call":
                merged = _merge_args(old.args, new.args, sizes, new.name)
                if symbolic.is_symbolic(merged):
                    symbolic_args[id(new)] = merged
    except symbolic.NotGeneric as why:
        raise UserError(f"Constraints violated ({name})! The program is not the same for every size of {name}: "
                        f"{why}.  ember.export supports sizes that scale with one batch size (m * {name}); "
                        "otherwise export with static shapes") from None
    return symbolic_args


def _merge_args(old, new, sizes: symbolic.Sizes, where: str):
    """A node's args from the two captures merged: graph values kept, differing ints as Batch(m)."""
    if isinstance(new, Value):
        return new
    if isinstance(new, (tuple, list)) and isinstance(old, (tuple, list)) and len(old) == len(new):
        items = [_merge_args(a, b, sizes, where) for a, b in zip(old, new)]
        return type(new)(items)
    return sizes.merge(old, new, f"{where} arguments")


def capture(mod, args: tuple, kwargs: dict, dynamic_shapes) -> Program:
    """The Program of mod on the example inputs (see the module docstring)."""
    found = dynamic_dims(mod, args, kwargs, dynamic_shapes)
    symbol = batch_symbol(found)
    roles = _state_roles(mod)
    symbolic_args: dict = {}
    if symbol is not None:
        grown_args, grown_kwargs, other = _grown_inputs(found, symbol, args, kwargs)
        try:
            grown = _trace(mod, grown_args, grown_kwargs)
        except (RuntimeError, ValueError, IndexError) as error:
            if isinstance(error, Unsupported):
                raise
            raise UserError(f"Constraints violated ({symbol['name']})! The module fails for {symbol['name']} = "
                            f"{other} ({type(error).__name__}: {error}); mark every input dim of that size") \
                from None
        example = _trace(mod, args, kwargs)
        sizes = symbolic.Sizes(other, symbol["size"], max_power=1)  # one batch size, m * B (the archive format)
        symbolic_args = _generalize(grown, example, sizes, roles, symbol["name"])
    else:
        example = _trace(mod, args, kwargs)
    graph = example.graph
    eliminate_dead_code(graph)
    return _Writer(mod, example, roles, symbol, symbolic_args).program(args, kwargs)


def _state_roles(mod) -> dict:
    """id(tensor) -> (kind, name, persistent, aliases) for the module's parameters and buffers; a tensor
    registered under several names (tied weights) gets the first as its name, the others as aliases."""
    roles: dict = {}
    for name, parameter in mod.named_parameters(remove_duplicate=False):
        if id(parameter) in roles:
            roles[id(parameter)][3].append(name)
        else:
            roles[id(parameter)] = ("PARAMETER", name, True, [])
    for module_name, module in mod.named_modules(remove_duplicate=False):
        for name, buffer in module._buffers.items():
            if buffer is None:
                continue
            target = f"{module_name}.{name}" if module_name else name
            if id(buffer) in roles:
                if target != roles[id(buffer)][1] and target not in roles[id(buffer)][3]:
                    roles[id(buffer)][3].append(target)
            else:
                roles[id(buffer)] = ("BUFFER", target, name not in module._non_persistent_buffers_set, [])
    return roles


# ---------------------------------------------------------------- writing the program


class _Writer:
    """Names every graph value torch's way (p_fc1_weight, b_bn_running_mean, x, linear, linear_1) and writes
    the graph, the signature and the input spec as JSON-able data."""

    def __init__(self, mod, tracer: Tracer, roles: dict, symbol, symbolic_args: dict) -> None:
        self.mod = mod
        self.tracer = tracer
        self.graph = tracer.graph
        self.roles = roles
        self.symbol = symbol
        self.symbolic_args = symbolic_args
        self.names: dict = {}  # id(Value) -> name
        self.used: dict = {}  # base -> next suffix
        self.taken: set = set()

    def fresh(self, base: str) -> str:
        base = re.sub(r"\W", "_", base).strip("_") or "v"
        if base[0].isdigit():
            base = "_" + base
        name = base
        while name in self.taken:
            self.used[base] = self.used.get(base, 0) + 1
            name = f"{base}_{self.used[base]}"
        self.taken.add(name)
        return name

    def name_of(self, value: Value) -> str:
        return self.names[id(value)]

    # ------------------------------------------------------------ inputs
    def _inputs(self) -> tuple[list, dict, dict]:
        """Input specs of every parameter and buffer (torch lifts them all, used or not), then of the constants
        (tensors from outside the module: closure tensors, untraced factories such as torch.arange)."""
        externals: dict = {}
        lifted = []
        for node in self.graph.nodes:
            if node.kind == "external":
                externals.setdefault(id(node.tensor), []).append(node)
                if id(node.tensor) not in self.roles:
                    lifted.append(node)
        specs, state, constants = [], {}, {}
        by_kind = sorted(self.roles.items(), key=lambda item: item[1][0] != "PARAMETER")
        for key, (kind, target, persistent, aliases) in by_kind:
            nodes = externals.get(key, [])
            tensor = nodes[0].tensor if nodes else self._state_tensor(kind, target)
            name = self.fresh(("p_" if kind == "PARAMETER" else "b_") + target.replace(".", "_"))
            for node in nodes:
                self.names[id(node.results[0])] = name
            specs.append(self._spec(kind, name, target, tensor, persistent))
            specs[-1]["aliases"] = aliases
            state[target] = tensor
        for node in lifted:
            known = self.names.get(id(externals[id(node.tensor)][0].results[0]))
            if known is not None:
                self.names[id(node.results[0])] = known
                continue
            target = f"lifted_tensor_{len(constants)}"
            name = self.fresh("c_" + target)
            self.names[id(node.results[0])] = name
            constants[target] = node.tensor
            specs.append(self._spec("CONSTANT_TENSOR", name, target, node.tensor, True, node.results[0]))
        return specs, state, constants

    def _state_tensor(self, kind: str, target: str):
        return self.mod.get_parameter(target) if kind == "PARAMETER" else self.mod.get_buffer(target)

    def _user_inputs(self, args: tuple, kwargs: dict) -> tuple[list, dict, dict]:
        """Specs of the user inputs, the example tensors by name, and id(tensor) -> name for the input spec."""
        try:
            parameters = [name for name, parameter in inspect.signature(self.mod.forward).parameters.items()
                          if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD)]
        except (TypeError, ValueError):
            parameters = []
        specs, examples, by_tensor = [], {}, {}
        unique = []
        for _, tensor in flatten_tensors(args, kwargs):
            if id(tensor) not in by_tensor:
                by_tensor[id(tensor)] = None
                unique.append(tensor)
        for tensor, (path, value) in zip(unique, self.tracer.placeholders):
            name = self.fresh(_input_name(path, parameters))
            self.names[id(value)] = name
            by_tensor[id(tensor)] = name
            examples[name] = tensor
            specs.append(self._spec("USER_INPUT", name, path, tensor, True, value))
        return specs, examples, by_tensor

    def _spec(self, kind: str, name: str, target: str, tensor, persistent: bool, value: Value = None) -> dict:
        """One input: its role, name, target, and dtype/shape (symbolic from the graph value where there is one)."""
        shape = symbolic.symbolic_shape(value) if value is not None else tuple(tensor.shape)
        return {"kind": kind, "name": name, "target": target, "persistent": persistent,
                "dtype": tensor._dtype.name, "shape": [encode(size, "shape") for size in shape],
                "requires_grad": bool(tensor._requires_grad)}

    def _shape(self, value: Value) -> list:
        return [encode(size, "shape") for size in symbolic.symbolic_shape(value)]

    # ------------------------------------------------------------ nodes
    def _node(self, node) -> dict:
        where = f"node {node.name}"
        if node.kind == "detach":
            name = self.fresh("detach")
            self.names[id(node.results[0])] = name
            return {"name": name, "kind": "detach", "args": [self.name_of(node.args[0])],
                    "outputs": self._outputs(node, [name]), "source": node.source}
        op = node.op
        ref = _registry.reference(op)
        if ref is None:
            raise Unsupported(f"ember.export: {op.name} ({where}) is not one of ember's registered ops (a custom "
                              "autograd.Function or a hook?); it cannot be exported")
        name = self.fresh(op.name)
        outputs = [name] if len(node.results) == 1 else [self.fresh(f"{name}_out{i}")
                                                          for i in range(len(node.results))]
        params = node.symbolic_params if node.symbolic_params is not None else node.params
        args = self.symbolic_args.get(id(node), node.args)
        encoded = {"name": name, "kind": "call", "target": op.name, "ref": ref,
                   "args": encode(tuple(args), f"{where} ({op.name}) arguments", self.name_of),
                   "params": {key: encode(value, f"{where} ({op.name}) param {key}") for key, value in params.items()},
                   "index_args": getattr(node, "index_args", 0),
                   "outputs": None, "source": node.source}
        for value, value_name in zip(node.results, outputs):
            self.names[id(value)] = value_name
        encoded["outputs"] = self._outputs(node, outputs)
        return encoded

    def _outputs(self, node, names: list) -> list:
        return [{"name": name, "dtype": value.dtype.name, "shape": self._shape(value)}
                for name, value in zip(names, node.results)]

    # ------------------------------------------------------------ the whole program
    def program(self, args: tuple, kwargs: dict) -> Program:
        state_specs, state, constants = self._inputs()
        user_specs, examples, by_tensor = self._user_inputs(args, kwargs)
        nodes = [self._node(node) for node in self.graph.nodes if node.kind in ("call", "detach")]
        kinds = {spec["name"]: spec["kind"] for spec in state_specs + user_specs}
        targets = {spec["name"]: spec["target"] for spec in state_specs + user_specs}
        mutations, output_specs = [], []
        for target, new, _ in self.graph.mutations:
            target_name, value_name = self.name_of(target), self.name_of(new)
            mutations.append({"target": target_name, "value": value_name})
            kind = {"BUFFER": "BUFFER_MUTATION", "PARAMETER": "PARAMETER_MUTATION",
                    "USER_INPUT": "USER_INPUT_MUTATION"}.get(kinds[target_name], "CONSTANT_MUTATION")
            output_specs.append({"kind": kind, "name": value_name, "target": targets[target_name]})
        structure = self.graph.output.structure
        for value in iter_values(structure):
            output_specs.append({"kind": "USER_OUTPUT", "name": self.name_of(value), "target": None})
        spec = {
            "format": "ember.export", "version": FORMAT_VERSION, "ember_version": _ember_version(),
            "module": type(self.mod).__name__,
            "inputs": state_specs + user_specs,
            "nodes": nodes,
            "output": encode(structure, "the output", self.name_of),
            "mutations": mutations,
            "output_specs": output_specs,
            "in_spec": self._in_spec(args, kwargs, by_tensor),
            "batch": self._batch(user_specs),
        }
        return Program(spec, state, constants, examples)

    def _in_spec(self, args: tuple, kwargs: dict, by_tensor: dict) -> dict:
        def leaf(value):
            if isinstance(value, Tensor):
                return {"$input": by_tensor[id(value)]}
            if isinstance(value, (tuple, list)):
                items = [leaf(item) for item in value]
                if isinstance(value, list):
                    return items
                return encode(type(value)(*items) if hasattr(value, "_fields") else tuple(items), "the inputs")
            if isinstance(value, dict):
                return {"$dict": [[encode(key, "the inputs"), leaf(item)] for key, item in value.items()]}
            return encode(value, "the inputs")

        return {"args": [leaf(arg) for arg in args], "kwargs": {key: leaf(arg) for key, arg in kwargs.items()}}

    def _batch(self, user_specs: list):
        if self.symbol is None:
            return None
        for spec in user_specs:
            for dim, size in enumerate(spec["shape"]):
                if isinstance(size, dict):
                    return {"name": self.symbol["name"], "min": self.symbol["min"], "max": self.symbol["max"],
                            "source": [spec["name"], dim, size["$batch"]]}
        return None


def _ember_version() -> str:
    from .. import __version__

    return __version__


def _input_name(path: str, parameters: list) -> str:
    """args[0] -> forward's first parameter name (x); kwargs['mask'] -> mask; args[1][2] -> xs_2."""
    match = re.match(r"args\[(\d+)\](.*)", path)
    if match:
        index = int(match.group(1))
        base = parameters[index] if index < len(parameters) else f"args_{index}"
        rest = match.group(2)
    else:
        match = re.match(r"kwargs\[['\"](.+?)['\"]\](.*)", path)
        base, rest = (match.group(1), match.group(2)) if match else ("input", "")
    suffix = "_".join(re.findall(r"\[['\"]?([^\]'\"]+)['\"]?\]", rest))
    return f"{base}_{suffix}" if suffix else base


__all__ = ["Program", "capture", "FORMAT_VERSION"]
