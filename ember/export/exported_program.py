"""ExportedProgram: a captured graph, its signature and its tensors, runnable without the model's class.

Built from a `Program` (the JSON-able description and the tensors) by decoding it, both right after
export() and after load(), so a program runs the same way in the process that exported it and in a new
one.  Nodes are torch.fx-like (`op` is placeholder / call_function / output, `target` the registered op
name, `args`, `kwargs` = the op's params); running them is one `ember._dispatch.call` per node, so grad
mode and autograd behave as for eager ops.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import _dispatch
from .. import _dtype as dt
from .._autograd.grad_mode import no_grad
from .._compile.symbolic import Batch, bind, is_symbolic
from .._compile.tracer import fill_arrays, name_arrays
from .._tensor import Tensor
from . import _registry
from ._capture import FORMAT_VERSION, Program
from ._codec import InputRef, Ref, decode, dtype_abbreviation, substitute, values_in


@dataclass
class InputSpec:
    """One graph input: kind PARAMETER / BUFFER / CONSTANT_TENSOR / USER_INPUT, its name and target."""

    kind: str
    name: str
    target: str
    persistent: bool = True
    dtype: object = None
    shape: tuple = ()
    requires_grad: bool = False


@dataclass
class OutputSpec:
    """One graph output: kind USER_OUTPUT / BUFFER_MUTATION / USER_INPUT_MUTATION..., its name and target."""

    kind: str
    name: str
    target: str | None = None


@dataclass
class ExportGraphSignature:
    """Which graph inputs are parameters, buffers, constants and user inputs; which outputs write back."""

    input_specs: list = field(default_factory=list)
    output_specs: list = field(default_factory=list)

    def _targets(self, kind: str) -> list:
        return [spec.target for spec in self.input_specs if spec.kind == kind]

    @property
    def parameters(self) -> list:
        return self._targets("PARAMETER")

    @property
    def buffers(self) -> list:
        return self._targets("BUFFER")

    @property
    def lifted_tensor_constants(self) -> list:
        return self._targets("CONSTANT_TENSOR")

    @property
    def user_inputs(self) -> list:
        return [spec.name for spec in self.input_specs if spec.kind == "USER_INPUT"]

    @property
    def user_outputs(self) -> list:
        return [spec.name for spec in self.output_specs if spec.kind == "USER_OUTPUT"]

    @property
    def inputs_to_parameters(self) -> dict:
        return {spec.name: spec.target for spec in self.input_specs if spec.kind == "PARAMETER"}

    @property
    def inputs_to_buffers(self) -> dict:
        return {spec.name: spec.target for spec in self.input_specs if spec.kind == "BUFFER"}

    @property
    def buffers_to_mutate(self) -> dict:
        return {spec.name: spec.target for spec in self.output_specs if spec.kind == "BUFFER_MUTATION"}

    def __str__(self) -> str:
        lines = ["# inputs"]
        for spec in self.input_specs:
            target = "" if spec.kind == "USER_INPUT" else f" target={spec.target!r}"
            persistent = f" persistent={spec.persistent}" if spec.kind == "BUFFER" else ""
            lines.append(f"{spec.name}: {spec.kind}{target}{persistent}")
        lines += ["", "# outputs"]
        for spec in self.output_specs:
            target = "" if spec.target is None else f" target={spec.target!r}"
            lines.append(f"{spec.name}: {spec.kind}{target}")
        return "\n".join(lines)


class Node:
    """One graph node, shaped like torch.fx.Node: op, name, target, args, kwargs; `meta["val"]` holds
    (dtype, shape) per result."""

    def __init__(self, op: str, name: str, target, args: tuple = (), kwargs: dict | None = None) -> None:
        self.op = op
        self.name = name
        self.target = target
        self.args = args
        self.kwargs = kwargs or {}
        self.meta: dict = {}
        self.opdef = None  # the OpDef of a call_function node (None for a detach)
        self.outputs: list = []  # result names
        self.index_args = 0
        self.symbolic = False
        self.source = ""

    def __repr__(self) -> str:
        return self.name


class Graph:
    """The nodes in execution order; str() prints them torch.fx's way, with op names as targets."""

    def __init__(self, nodes: list, batch_name: str = "s0") -> None:
        self.nodes = nodes
        self._batch_name = batch_name

    def __str__(self) -> str:
        lines = ["graph():"]
        users: dict = {}
        for node in self.nodes:
            for ref in values_in((node.args, node.kwargs)):
                users[ref.name] = users.get(ref.name, 0) + 1
        for node in self.nodes:
            if node.op == "output":
                lines.append(f"    return {_text(node.args[0], batch=self._batch_name)}")
                continue
            count = sum(users.get(name, 0) for name in (node.outputs or [node.name]))
            head = f"    %{node.name} : [num_users={count}] = {node.op}[target={node.target}]"
            if node.op == "placeholder":
                lines.append(head)
            else:
                name = self._batch_name
                kwargs = ", ".join(f"{key}: {_text(value, batch=name)}" for key, value in node.kwargs.items())
                lines.append(f"{head}(args = {_text(node.args, batch=name)}, kwargs = {{{kwargs}}})")
        return "\n".join(lines)

    __repr__ = __str__


class GraphModule:
    """ep.graph_module: the lifted graph (parameters and buffers are inputs), its `graph` and `code`."""

    def __init__(self, program: ExportedProgram) -> None:
        self._program = program
        self.graph = program.graph

    @property
    def code(self) -> str:
        return self._program._code(indent=0)

    def print_readable(self, print_output: bool = True) -> str:
        text = "class GraphModule(torch.nn.Module):\n" + self._program._code(indent=1)
        if print_output:
            print(text)
        return text

    def __call__(self, *inputs):
        """Run the lifted graph: every input spec's tensor positionally (parameters first); flat outputs."""
        specs = self._program.graph_signature.input_specs
        if len(inputs) != len(specs):
            raise TypeError(f"the graph module takes {len(specs)} inputs, got {len(inputs)}")
        env = {spec.name: tensor for spec, tensor in zip(specs, inputs)}
        self._program._execute(env, self._program._batch_size(env))
        return tuple(env[spec.name] for spec in self._program.graph_signature.output_specs)


def _text(value, prefix: str = "%", batch: str = "s0") -> str:
    """A decoded arg or param as text: graph values as prefix+name, batch sizes with the batch dim's name."""
    if isinstance(value, Ref):
        return f"{prefix}{value.name}"
    if isinstance(value, Batch):
        return batch if value.m == 1 else f"{value.m}*{batch}"
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        fields = ", ".join(f"{key}={_text(item, prefix, batch)}" for key, item in zip(value._fields, value))
        return f"{type(value).__name__}({fields})"
    if isinstance(value, tuple):
        inner = ", ".join(_text(item, prefix, batch) for item in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(_text(item, prefix, batch) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key!r}: {_text(item, prefix, batch)}" for key, item in value.items()) + "}"
    if type(value).__name__ == "Generator":
        return "default_generator"  # the only generator a program can hold (ember/export/_codec.py)
    return repr(value)


class ExportedProgram:
    """What ember.export.export returns and ember.export.load reads (torch.export.ExportedProgram).

    `module()` gives a callable nn.Module that runs the graph with the exported parameters; `graph`,
    `graph_module.code` and `print(ep)` show the graph; `state_dict`, `constants`, `named_parameters()`,
    `named_buffers()`, `example_inputs`, `graph_signature`, `call_spec` and `range_constraints` describe it.
    """

    def __init__(self, program: Program) -> None:
        spec = program.spec
        if spec.get("format") != "ember.export" or spec.get("version") != FORMAT_VERSION:
            raise ValueError(f"ember.export: not an ember exported program of format version {FORMAT_VERSION} "
                             f"(found {spec.get('format')!r} version {spec.get('version')!r})")
        self._program = program
        self._spec = spec
        inputs = [InputSpec(item["kind"], item["name"], item["target"], item["persistent"],
                            dt._dtype_by_name(item["dtype"]), tuple(decode(item["shape"])), item["requires_grad"])
                  for item in spec["inputs"]]
        outputs = [OutputSpec(item["kind"], item["name"], item["target"]) for item in spec["output_specs"]]
        self.graph_signature = ExportGraphSignature(inputs, outputs)
        self._output = decode(spec["output"])
        self._mutations = [(item["target"], item["value"]) for item in spec["mutations"]]
        in_spec = spec["in_spec"]
        self._in_args = [decode(item) for item in in_spec["args"]]
        self._in_kwargs = {key: decode(item) for key, item in in_spec["kwargs"].items()}
        self._batch = spec["batch"]
        self.graph = Graph(self._decode_nodes(spec, inputs), self._batch["name"] if self._batch else "s0")
        self.graph_module = GraphModule(self)
        self._state = program.state
        self._aliases = {item["target"]: item.get("aliases", []) for item in spec["inputs"]}  # tied weights
        self.constants = dict(program.constants)
        for spec_item in inputs:  # non-persistent buffers are constants in torch's state_dict split
            if spec_item.kind == "BUFFER" and not spec_item.persistent:
                self.constants[spec_item.target] = program.state[spec_item.target]

    # ------------------------------------------------------------ decoding
    def _decode_nodes(self, spec: dict, inputs: list) -> list:
        nodes = []
        for item in inputs:
            node = Node("placeholder", item.name, item.name)
            node.meta["val"] = [(item.dtype, item.shape)]
            nodes.append(node)
        for item in spec["nodes"]:
            args = decode(item["args"])
            if item["kind"] == "detach":
                node = Node("call_function", item["name"], "detach", (Ref(item["args"][0]),))
            else:
                params = {key: decode(value) for key, value in item["params"].items()}
                node = Node("call_function", item["name"], item["target"], args, params)
                node.opdef = _registry.lookup(item["target"], item.get("ref"))
                node.index_args = item["index_args"]
                node.symbolic = is_symbolic((args, params))
                if node.index_args:
                    name_arrays(params, args[len(args) - node.index_args:])
            node.outputs = [output["name"] for output in item["outputs"]]
            node.meta["val"] = [(dt._dtype_by_name(output["dtype"]), tuple(decode(output["shape"])))
                                for output in item["outputs"]]
            node.source = item.get("source", "")
            nodes.append(node)
        flat = tuple(Ref(spec_item.name) for spec_item in self.graph_signature.output_specs)
        nodes.append(Node("output", "output", "output", (flat,)))
        return nodes

    # ------------------------------------------------------------ tensors
    @property
    def state_dict(self) -> dict:
        """Parameters and persistent buffers by their names in the exported module."""
        persistent = {spec.target for spec in self.graph_signature.input_specs
                      if spec.kind == "PARAMETER" or (spec.kind == "BUFFER" and spec.persistent)}
        found = {}
        for target, tensor in self._state.items():
            if target in persistent:
                found[target] = tensor
                found.update((alias, tensor) for alias in self._aliases.get(target, ()))
        return found

    def named_parameters(self):
        for target in self.graph_signature.parameters:
            yield target, self._state[target]

    def parameters(self):
        for _, parameter in self.named_parameters():
            yield parameter

    def named_buffers(self):
        for target in self.graph_signature.buffers:
            yield target, self._state[target]

    def buffers(self):
        for _, buffer in self.named_buffers():
            yield buffer

    @property
    def example_inputs(self) -> tuple:
        """(args, kwargs) as given to export (the tensors are stored with the program)."""
        examples = self._program.examples
        args = substitute(self._in_args, lambda ref: examples[ref.name])
        kwargs = substitute(self._in_kwargs, lambda ref: examples[ref.name])
        return tuple(args), kwargs

    @property
    def call_spec(self):
        """(in_spec, out_spec): the input and output structures, `*` where a tensor goes."""
        from collections import namedtuple

        CallSpec = namedtuple("CallSpec", ["in_spec", "out_spec"])
        star = _Star()
        in_spec = (tuple(substitute(self._in_args, lambda ref: star)), substitute(self._in_kwargs, lambda ref: star))
        return CallSpec(in_spec, substitute(self._output, lambda ref: star))

    @property
    def range_constraints(self) -> dict:
        """{symbol: (min, max)} of the dynamic batch size (max None: unbounded); empty when all shapes are static."""
        if self._batch is None:
            return {}
        return {self._batch["name"]: (self._batch["min"], self._batch["max"])}

    def run_decompositions(self, decomp_table=None) -> ExportedProgram:
        """The graph already holds ember's primitive ops (composites are decomposed as they dispatch)."""
        return self

    # ------------------------------------------------------------ running
    def module(self):
        """A callable nn.Module holding the exported parameters and buffers that runs the graph."""
        from ._module import ExportedModule

        return ExportedModule(self)

    def _batch_size(self, env: dict):
        if self._batch is None:
            return None
        name, dim, m = self._batch["source"]
        return env[name].shape[dim] // m

    def _execute(self, env: dict, batch) -> None:
        """Run every node, reading and writing values by name in `env`; then the in-place write-backs."""
        def lookup(ref):
            return env[ref.name]

        for node in self.graph.nodes:
            if node.op != "call_function":
                continue
            if node.opdef is None:  # a detach
                env[node.outputs[0]] = env[node.args[0].name].detach()
                continue
            args = substitute(node.args, lookup)
            params = node.kwargs
            if node.symbolic:
                args, params = bind(args, batch), bind(params, batch)
            if node.index_args:
                count = node.index_args
                params = fill_arrays(params, args[len(args) - count:])
                args = args[:len(args) - count]
            result = _dispatch.call(node.opdef, args, params)
            if isinstance(result, tuple):
                env.update(zip(node.outputs, result))
            else:
                env[node.outputs[0]] = result
        if self._mutations:
            with no_grad():
                for target, value in self._mutations:
                    env[target]._inplace_from(env[value])

    def _bind_inputs(self, args: tuple, kwargs: dict) -> dict:
        """{user input name: tensor}, checking the call against the exported input structure."""
        bound: dict = {}
        if len(args) != len(self._in_args):
            raise TypeError(f"the exported program takes {len(self._in_args)} positional inputs, got {len(args)}")
        if set(kwargs) != set(self._in_kwargs):
            raise TypeError(f"the exported program takes the keyword inputs {sorted(self._in_kwargs)}, got "
                            f"{sorted(kwargs)}")
        for index, (spec, value) in enumerate(zip(self._in_args, args)):
            _match(spec, value, f"*args[{index}]", bound)
        for key, spec in self._in_kwargs.items():
            _match(spec, kwargs[key], f"**kwargs[{key!r}]", bound)
        self._check_inputs(bound)
        return bound

    def _check_inputs(self, bound: dict) -> None:
        batch = None
        if self._batch is not None:
            name, dim, m = self._batch["source"]
            batch = bound[name].shape[dim] // m
            low, high = self._batch["min"], self._batch["max"]
            if batch < max(low, 1) or (high is not None and batch > high):
                raise AssertionError(f"Guard failed: {self._batch['name']} = {batch} is outside "
                                     f"[{max(low, 1)}, {'int_oo' if high is None else high}]")
        for spec in self.graph_signature.input_specs:
            if spec.kind != "USER_INPUT":
                continue
            tensor = bound[spec.name]
            if tensor.dtype is not spec.dtype:
                raise AssertionError(f"Guard failed: {spec.name}.dtype == {spec.dtype} (got {tensor.dtype})")
            if tensor.dim() != len(spec.shape):
                raise AssertionError(f"Guard failed: {spec.name}.dim() == {len(spec.shape)} (got {tensor.dim()})")
            for dim, (expected, actual) in enumerate(zip(spec.shape, tensor.shape)):
                size = expected.m * batch if isinstance(expected, Batch) else expected
                if size != actual:
                    shown = self._size_text(expected)
                    raise AssertionError(f"Guard failed: {spec.name}.size()[{dim}] == {shown} (got {actual})")

    def _size_text(self, size) -> str:
        return _text(size, "", self._batch["name"] if self._batch else "s0")

    # ------------------------------------------------------------ printing
    def _annotation(self, meta) -> str:
        dtype, shape = meta
        return f'"{dtype_abbreviation(dtype)}[{", ".join(self._size_text(s) for s in shape)}]"'

    def _code(self, indent: int) -> str:
        """The graph as Python, torch's GraphModule.forward style: one line per op, its source above it."""
        pad = "    " * indent
        batch = self._batch["name"] if self._batch else "s0"
        placeholders = [node for node in self.graph.nodes if node.op == "placeholder"]
        signature = ", ".join(["self"] + [f"{node.name}: {self._annotation(node.meta['val'][0])}"
                                          for node in placeholders])
        lines = [f"{pad}def forward({signature}):"]
        previous = None
        for node in self.graph.nodes:
            if node.op == "output":
                lines.append(f"{pad}    return {_text(node.args[0], '', batch)}")
            elif node.op == "call_function":
                if node.source and node.source != previous:
                    lines.append(f"{pad}    # File: {node.source}")
                previous = node.source
                targets = ", ".join(f"{name}: {self._annotation(meta)}"
                                    for name, meta in zip(node.outputs, node.meta["val"]))
                args = [_text(arg, "", batch) for arg in node.args]
                args += [f"{key}={_text(value, '', batch)}" for key, value in node.kwargs.items()]
                lines.append(f"{pad}    {targets} = {node.target}({', '.join(args)})")
        return "\n".join(lines) + "\n"

    def __str__(self) -> str:
        code = self._code(indent=2)
        signature = "\n".join("    " + line if line else "" for line in str(self.graph_signature).split("\n"))
        ranges = ", ".join(f"{name}: VR[{low}, {'int_oo' if high is None else high}]"
                           for name, (low, high) in self.range_constraints.items())
        return (f"ExportedProgram:\n    class GraphModule(torch.nn.Module):\n{code}\n"
                f"Graph signature:\n{signature}\nRange constraints: {{{ranges}}}\n")

    def __repr__(self) -> str:
        return str(self)


class _Star:
    def __repr__(self) -> str:
        return "*"


def _match(spec, value, path: str, bound: dict) -> None:
    """Walk the exported input structure and a call's inputs together, binding tensors to input names."""
    if isinstance(spec, InputRef):
        if not isinstance(value, Tensor):
            raise TypeError(f"input {path}: expected a tensor, got {type(value).__name__}")
        known = bound.get(spec.name)
        if known is not None and known is not value:
            raise TypeError(f"input {path}: the exported program got the same tensor here and at another input")
        bound[spec.name] = value
    elif isinstance(spec, (tuple, list)):
        if not isinstance(value, (tuple, list)) or len(value) != len(spec):
            raise TypeError(f"input {path}: expected a sequence of {len(spec)} items, got {value!r:.60}")
        for index, (item_spec, item) in enumerate(zip(spec, value)):
            _match(item_spec, item, f"{path}[{index}]", bound)
    elif isinstance(spec, dict):
        if not isinstance(value, dict) or set(value) != set(spec):
            raise TypeError(f"input {path}: expected a dict with keys {sorted(spec)}")
        for key, item_spec in spec.items():
            _match(item_spec, value[key], f"{path}[{key!r}]", bound)
    elif isinstance(value, Tensor) or not _same_constant(spec, value):
        raise AssertionError(f"Expected input at {path} to be equal to {spec!r}, but got {value!r:.60}")


def _same_constant(expected, actual) -> bool:
    if type(expected) is not type(actual):
        return False
    if isinstance(expected, float) and expected != expected:
        return actual != actual
    return expected == actual
