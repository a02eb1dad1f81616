"""The export pipeline behind ember.onnx.export: names and dynamic axes, capture, translation, the ModelProto."""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field

import numpy as np

from .._compile.graph import iter_values
from .._compile.tracer import flatten_tensors
from . import _capture
from ._builder import Builder
from ._program import ONNXProgram
from ._translate import TRANSLATIONS, tensor_type, translate
from .errors import OnnxExporterError

_PATH_ITEM = re.compile(r"\[([^\]]*)\]")


@dataclass
class Options:
    opset: int
    input_names: list = field(default_factory=list)
    output_names: list = field(default_factory=list)
    dynamic_axes: object = None
    dynamic_shapes: object = None
    dynamo: bool = True
    custom_translation_table: dict = field(default_factory=dict)
    verify: bool = False


def export_program(onnx, model, args: tuple, kwargs: dict, options: Options) -> ONNXProgram:
    """Capture model(*args, **kwargs) and build its ONNX model (see ember/onnx/__init__.py)."""
    paths, tensors = _unique_inputs(args, kwargs)
    input_names = _input_names(model, paths, options.input_names)
    dynamic = _dynamic_axes(options, model, paths, input_names)
    input_axes = [_input_axes(dynamic.get(name, {}), tensor, name) for name, tensor in zip(input_names, tensors)]
    named = _named_tensors(model)
    capture = _capture.capture(model, args, kwargs, input_axes, set(named))
    outputs = list(iter_values(capture.graph.output.structure))
    output_names = _output_names(options.output_names, len(outputs))
    for key in dynamic:
        if key not in input_names and key not in output_names:
            warnings.warn(f"Provided key {key} for dynamic axes is not a valid input/output name", stacklevel=3)

    builder = Builder(onnx, options.opset, capture)
    for name in input_names + output_names + sorted(set(named.values())):
        builder.reserve(name)
    builder.input_names = input_names
    table = dict(TRANSLATIONS)
    for key, fn in options.custom_translation_table.items():
        if not isinstance(key, str):
            raise TypeError("ember.onnx.export: custom_translation_table keys are ember op names (str), "
                            f"got {key!r}")
        table[key] = fn
    translate(builder, capture, named, table)
    graph_outputs = _wire_outputs(builder, outputs, output_names, dynamic)
    graph_inputs = []
    for (_, value), name, axes in zip(capture.placeholders, input_names, input_axes):
        graph_inputs.append(tensor_type(builder, name, value.dtype, value.shape, axes))
    used = {name for node in builder.nodes for name in node.input}
    builder.initializers = [t for t in builder.initializers if t.name in used]
    helper = onnx.helper
    graph = helper.make_graph(builder.nodes, "main_graph", graph_inputs, graph_outputs,
                              initializer=builder.initializers)
    opsets = [helper.make_opsetid("", options.opset)]
    from .. import __version__
    from . import producer_name

    proto = helper.make_model(graph, opset_imports=opsets, producer_name=producer_name, producer_version=__version__)
    proto.ir_version = helper.find_min_ir_version_for(opsets)
    initializer_names = {t.name for t in builder.initializers}
    program = ONNXProgram(proto, set(named.values()) & initializer_names, len(input_names))
    if options.verify:
        _verify(program, capture.result, args, kwargs)
    return program


def _unique_inputs(args, kwargs):
    seen, paths, tensors = set(), [], []
    for path, tensor in flatten_tensors(args, kwargs):
        if id(tensor) not in seen:
            seen.add(id(tensor))
            paths.append(path)
            tensors.append(tensor)
    return paths, tensors


def _input_names(model, paths: list, given: list) -> list:
    if len(given) > len(paths):
        raise ValueError(f"number of input names provided ({len(given)}) exceeded number of inputs ({len(paths)})")
    parameters = _forward_parameters(model)
    names = list(given)
    for path in paths[len(given):]:
        name = _default_name(path, parameters)
        while name in names:
            name += "_"
        names.append(name)
    if len(set(names)) != len(names):
        raise ValueError(f"ember.onnx.export: input names must be unique, got {names}")
    return names


def _forward_parameters(model) -> list:
    """(name, is *args) of the forward's positional parameters."""
    import inspect

    try:
        signature = inspect.signature(getattr(model, "forward", model))
    except (TypeError, ValueError):
        return []
    return [(p.name, p.kind == p.VAR_POSITIONAL) for p in signature.parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)]


def _default_name(path: str, parameters: list) -> str:
    """args[1][0] -> <forward's second parameter>_0; kwargs['mask'] -> mask."""
    items = [item.strip("'\"") for item in _PATH_ITEM.findall(path)]
    if path.startswith("args"):
        position = int(items[0])
        base = f"input_{position}"
        for index, (name, variadic) in enumerate(parameters):
            if variadic and position >= index:
                base = f"{name}_{position - index}"
                break
            if index == position:
                base = name
                break
    else:
        base = items[0]
    return "_".join([base] + items[1:])


def _output_names(given: list, count: int) -> list:
    if len(given) > count:
        raise ValueError(f"number of output names provided ({len(given)}) exceeded number of outputs ({count})")
    names = list(given)
    for index in range(len(given), count):
        name = f"output_{index}"
        while name in names:
            name += "_"
        names.append(name)
    return names


def _dynamic_axes(options: Options, model, paths: list, input_names: list) -> dict:
    """{input or output name: {axis: axis name}} from dynamic_axes (torch's two forms) or dynamic_shapes."""
    table = {}
    for key, axes in (options.dynamic_axes or {}).items():
        if isinstance(axes, dict):
            table[key] = {int(axis): str(name) for axis, name in axes.items()}
        else:
            table[key] = {int(axis): f"{key}_dynamic_axes_{i + 1}" for i, axis in enumerate(axes)}
    if options.dynamic_shapes is not None:
        table.update(_from_dynamic_shapes(options.dynamic_shapes, model, paths, input_names))
    return table


def _from_dynamic_shapes(specs, model, paths: list, input_names: list) -> dict:
    """torch.export-style dynamic_shapes ({arg: {axis: Dim}} or a tuple by position) as dynamic_axes; Dims are
    named by their __name__ (torch.export.Dim("batch")), strings by themselves."""
    parameters = [name for name, variadic in _forward_parameters(model) if not variadic]
    by_argument = {}  # a positional index or an argument name -> the input's name (top-level tensors only)
    for path, name in zip(paths, input_names):
        items = [item.strip("'\"") for item in _PATH_ITEM.findall(path)]
        if len(items) != 1:
            continue
        if path.startswith("args"):
            position = int(items[0])
            by_argument[position] = name
            if position < len(parameters):
                by_argument[parameters[position]] = name
        else:
            by_argument[items[0]] = name
    pairs = specs.items() if isinstance(specs, dict) else enumerate(specs)
    table = {}
    for key, spec in pairs:
        if spec is None:
            continue
        name = by_argument.get(key)
        if name is None:
            raise NotImplementedError(f"ember.onnx.export: dynamic_shapes for {key!r}: only top-level tensor "
                                      "arguments are supported; use dynamic_axes with input_names")
        axes = spec.items() if isinstance(spec, dict) else enumerate(spec)
        table[name] = {int(axis): _dim_name(dim, name, int(axis)) for axis, dim in axes if dim is not None}
    return table


def _dim_name(dim, input_name: str, axis: int) -> str:
    if isinstance(dim, str):
        return dim
    name = getattr(dim, "__name__", None)
    return name if isinstance(name, str) else f"{input_name}_dim_{axis}"


def _input_axes(spec: dict, tensor, name: str) -> dict:
    rank = tensor.ndim
    axes = {}
    for axis, symbol in spec.items():
        if not -rank <= axis < rank:
            raise ValueError(f"ember.onnx.export: dynamic axis {axis} of input '{name}' is out of range for its "
                             f"{rank} dims")
        axes[axis % rank] = symbol
    return axes


def _named_tensors(model) -> dict:
    """id(tensor) -> state_dict-style name of every parameter and buffer of a Module."""
    from ..nn import Module

    if not isinstance(model, Module):
        return {}
    named = {}
    for name, tensor in list(model.named_parameters()) + list(model.named_buffers()):
        named.setdefault(id(tensor), name)
    return named


def _wire_outputs(builder: Builder, outputs: list, output_names: list, dynamic: dict) -> list:
    """Give each output Value its graph output name (renaming the producing node's output, or an Identity)."""
    produced = {name for node in builder.nodes for name in node.output}
    taken = set(builder.input_names) | {t.name for t in builder.initializers}
    renamed: dict = {}  # internal name -> the output name it became
    infos = []
    for value, name in zip(outputs, output_names):
        internal = builder.value(value)
        if internal in produced and internal not in taken and internal not in renamed:
            for node in builder.nodes:
                for i, item in enumerate(node.input):
                    if item == internal:
                        node.input[i] = name
                for i, item in enumerate(node.output):
                    if item == internal:
                        node.output[i] = name
            renamed[internal] = name
        else:
            source = renamed.get(internal, internal)
            builder.nodes.append(builder.helper.make_node("Identity", [source], [name], name=f"Identity_{name}"))
        axes = {axis % max(len(value.shape), 1): symbol for axis, symbol in dynamic.get(name, {}).items()}
        infos.append(tensor_type(builder, name, value.dtype, builder.shape(value), axes))
    return infos


def _verify(program: ONNXProgram, result, args, kwargs) -> None:
    expected = [np.asarray(t.detach()._data) for _, t in flatten_tensors((result,), {})]
    actual = program(*args, **kwargs)
    for index, (want, got) in enumerate(zip(expected, actual)):
        got = np.asarray(got.detach()._data)
        if want.shape != got.shape or not np.allclose(got, want, rtol=1e-3, atol=1e-5, equal_nan=True):
            raise OnnxExporterError(f"ember.onnx.export(verify=True): output {index} of onnxruntime differs from "
                                    "ember's eager output")
