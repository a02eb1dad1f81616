"""ember.onnx: export a model to ONNX with torch.onnx's API (`export`, `is_in_onnx_export`, `errors`, ...).

The forward is recorded by ember.compile's tracer (ember/_compile/tracer.py: every dispatched op, fullgraph),
traced again to check constants and fit sizes of dynamic axes (_capture.py), and each op node is translated by
one entry of a table (_translate.py) into ONNX nodes; parameters and buffers become initializers named by their
state_dict keys.  The `onnx` package is imported only inside export.  See docs/onnx.md.
"""

from __future__ import annotations

import contextlib
import enum
import warnings
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from . import errors
from ._program import ONNXProgram
from .errors import OnnxExporterError, UnsupportedOperatorError

__all__ = ["export", "is_in_onnx_export", "errors", "OnnxExporterError", "ONNXProgram", "TrainingMode",
           "OperatorExportTypes", "UnsupportedOperatorError", "select_model_mode_for_export", "producer_name",
           "producer_version", "register_custom_op_symbolic", "unregister_custom_op_symbolic"]

producer_name = "ember"
DEFAULT_OPSET = 18
MIN_OPSET, MAX_OPSET = 13, 23


class TrainingMode(enum.IntEnum):
    """The mode the TorchScript-style exporter (dynamo=False) puts the model in (torch.onnx.TrainingMode)."""

    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


class OperatorExportTypes(enum.IntEnum):
    """torch.onnx.OperatorExportTypes: only ONNX is supported (the others fall back to ATen ops in torch)."""

    ONNX = 0
    ONNX_ATEN = 1
    ONNX_ATEN_FALLBACK = 2
    ONNX_FALLTHROUGH = 3


_exporting = [False]


def __getattr__(name: str):
    if name == "producer_version":  # ember's version, read late: ember/__init__ sets it after its imports
        from .. import __version__

        return __version__
    raise AttributeError(f"module 'ember.onnx' has no attribute '{name}'")


def is_in_onnx_export() -> bool:
    """Whether an ONNX export is running (a forward can branch on it, as with torch)."""
    return _exporting[0]


def register_custom_op_symbolic(symbolic_name: str, symbolic_fn: Callable, opset_version: int) -> None:
    """torch's TorchScript-exporter hook for aten ops; ember translates its own ops: pass
    custom_translation_table={ember op name: fn(builder, node)} to export instead."""
    raise NotImplementedError("ember.onnx has no TorchScript symbolic registry: pass custom_translation_table="
                              "{'<ember op name>': fn(builder, node)} to ember.onnx.export (see docs/onnx.md)")


def unregister_custom_op_symbolic(symbolic_name: str, opset_version: int) -> None:
    """See register_custom_op_symbolic."""
    register_custom_op_symbolic(symbolic_name, None, opset_version)


@contextlib.contextmanager
def select_model_mode_for_export(model: Any, mode: TrainingMode):
    """Set model's training mode to `mode` for the with-block, then restore it (torch.onnx's helper)."""
    if not isinstance(mode, TrainingMode):
        raise TypeError(f"'mode' should be a torch.onnx.TrainingMode enum, but got '{type(mode)}'.")
    originally_training = getattr(model, "training", False)
    if hasattr(model, "training"):
        if mode == TrainingMode.TRAINING:
            model.train(True)
        elif mode == TrainingMode.EVAL:
            model.train(False)
    try:
        yield
    finally:
        if hasattr(model, "training") and mode != TrainingMode.PRESERVE:
            model.train(originally_training)


def export(
    model,
    args: tuple[Any, ...] = (),
    f=None,
    *,
    kwargs: dict[str, Any] | None = None,
    verbose: bool | None = None,
    input_names: Sequence[str] | None = None,
    output_names: Sequence[str] | None = None,
    opset_version: int | None = None,
    dynamo: bool = True,
    external_data: bool = True,
    dynamic_shapes: dict[str, Any] | tuple[Any, ...] | list[Any] | None = None,
    custom_translation_table: dict[str, Callable] | None = None,
    report: bool = False,
    optimize: bool = True,
    verify: bool = False,
    profile: bool = False,
    dump_exported_program: bool = False,
    artifacts_dir=".",
    export_params: bool = True,
    keep_initializers_as_inputs: bool = False,
    dynamic_axes: Mapping[str, Mapping[int, str]] | Mapping[str, Sequence[int]] | None = None,
    training: TrainingMode = TrainingMode.EVAL,
    operator_export_type: OperatorExportTypes = OperatorExportTypes.ONNX,
    do_constant_folding: bool = True,
    custom_opsets: Mapping[str, int] | None = None,
    export_modules_as_functions: bool | Collection[type] = False,
    autograd_inlining: bool = True,
) -> ONNXProgram | None:
    """Export `model` (an nn.Module or a function of tensors) called on `args` to ONNX.

    Args:
        model: what to export (an nn.Module, a function, or an ember.export ExportedProgram); called as
            model(*args, **kwargs) once per trace.
        args: example inputs (a tensor, or a tuple; a trailing dict is taken as kwargs).
        f: a path or a binary file object to write the model to, or None.
        input_names, output_names: names of the graph's inputs (flattened tensor arguments, in order) and
            outputs; by default the forward's parameter names and output_0, output_1, ...
        opset_version: the ONNX opset (13 to 23; default 18).
        dynamo: torch's default True returns an ONNXProgram and exports the model in the mode it is in (with a
            warning in training mode); False returns None and exports in `training` mode (EVAL by default), as
            torch's TorchScript exporter does.  Both use ember's one exporter.
        dynamic_axes: {name: {axis: axis_name}} or {name: [axis, ...]}: those input/output dims are symbolic in
            the graph; sizes computed from them (reshapes to batch * heads) follow at run time.
        dynamic_shapes: the dynamo form ({arg name: {axis: Dim or name}} or a tuple by position), converted to
            dynamic_axes.
        export_params, keep_initializers_as_inputs: whether parameters are stored in the file (False: they
            become graph inputs), and whether every initializer is also listed as a graph input.
        external_data: with dynamo=True and a path, weights go to `<f>.data` (torch's default).
        custom_translation_table: {ember op name: fn(builder, node)} entries added to the translation table.
        verify: run the exported model with onnxruntime and compare with ember's output.

    Accepted and ignored (no effect in ember): report, optimize, profile, dump_exported_program, artifacts_dir,
    do_constant_folding (onnxruntime folds constants), operator_export_type, custom_opsets,
    export_modules_as_functions, autograd_inlining.

    Example::

        >>> model = ember.nn.Sequential(ember.nn.Linear(4, 3), ember.nn.ReLU()).eval()
        >>> program = ember.onnx.export(model, (ember.randn(2, 4),), input_names=["x"],
        ...                             dynamic_axes={"x": {0: "batch"}})  # doctest: +SKIP
    """
    try:
        import onnx
    except ModuleNotFoundError:
        raise ModuleNotFoundError("ember.onnx.export needs the 'onnx' package (pip install onnx)",
                                  name="onnx") from None
    from . import _export

    if dynamic_shapes is not None and not dynamo:
        raise ValueError("The exporter only supports dynamic shapes through parameter dynamic_axes when dynamo=False.")
    if operator_export_type not in (OperatorExportTypes.ONNX, None):
        raise OnnxExporterError(
            f"ember.onnx.export supports operator_export_type=ONNX only, got {operator_export_type}")
    opset = DEFAULT_OPSET if opset_version is None else int(opset_version)
    if not MIN_OPSET <= opset <= MAX_OPSET:
        raise ValueError(f"ember.onnx.export supports opset_version {MIN_OPSET} to {MAX_OPSET}, got {opset}")
    model = getattr(model, "_orig_mod", model)  # an ember.compile'd module exports its original
    exported_program = type(model).__name__ == "ExportedProgram" and hasattr(model, "module")
    if exported_program:  # ember.export's program: its module replays the graph through ember's ops
        if not args and not kwargs and getattr(model, "example_inputs", None):
            args, kwargs = model.example_inputs
        model = model.module()
    args, kwargs = _normalise_args(args, kwargs)
    from ..nn import Module

    if dynamo:
        if isinstance(model, Module) and model.training and not exported_program:
            warnings.warn("Exporting a model while it is in training mode. Please ensure that this is intended, as "
                          "it may lead to different behavior during inference. Calling model.eval() before export "
                          "is recommended.", UserWarning, stacklevel=2)
        mode = contextlib.nullcontext()
    else:
        mode = select_model_mode_for_export(model, TrainingMode(training if training is not None else 0))
    options = _export.Options(
        opset=opset, input_names=list(input_names or ()), output_names=list(output_names or ()),
        dynamic_axes=dynamic_axes, dynamic_shapes=dynamic_shapes, dynamo=dynamo,
        custom_translation_table=dict(custom_translation_table or {}), verify=verify)
    _exporting[0] = True
    try:
        with mode:
            program = _export.export_program(onnx, model, args, kwargs, options)
    finally:
        _exporting[0] = False
    if verbose:
        print(onnx.printer.to_text(program.model_proto.graph))
    if f is not None:
        if dynamo:
            program.save(f, include_initializers=export_params, keep_initializers_as_inputs=keep_initializers_as_inputs,
                         external_data=external_data and not hasattr(f, "write"))
        else:
            from ._program import with_initializer_options, write

            proto = with_initializer_options(program.model_proto, export_params, keep_initializers_as_inputs,
                                             program._parameter_names, as_inputs_when_excluded=True)
            write(proto, f, external_data=False)
    return program if dynamo else None


def _normalise_args(args, kwargs):
    from .._tensor import Tensor

    if isinstance(args, Tensor):
        args = (args,)
    args = tuple(args) if isinstance(args, (tuple, list)) else (args,)
    if kwargs is None and args and isinstance(args[-1], dict):  # torch's legacy (args..., {kwargs}) form
        args, kwargs = args[:-1], args[-1]
    return args, dict(kwargs or {})
