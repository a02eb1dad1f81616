"""ONNXProgram: the exported model (torch.onnx.ONNXProgram's surface): its ModelProto, save, and a call that runs
it with onnxruntime."""

from __future__ import annotations

import os

import numpy as np

_LARGE_MODEL = 2**31 - 1  # protobuf's limit for one message: beyond it the weights must go to an external file


class ONNXProgram:
    """What `ember.onnx.export(..., dynamo=True)` returns.

    `model_proto` is the onnx.ModelProto; `save(path)` writes it; calling the program with ember tensors runs it
    with onnxruntime (installed separately) and returns ember tensors."""

    def __init__(self, model_proto, parameter_names=(), input_count: int | None = None) -> None:
        self._model_proto = model_proto
        self._parameter_names = set(parameter_names)
        self._input_count = input_count
        self._session = None
        self.exported_program = None  # torch's holds the torch.export program; ember exports from its tracer

    @property
    def model_proto(self):
        return self._model_proto

    @property
    def model(self):
        return self._model_proto

    def __repr__(self) -> str:
        graph = self._model_proto.graph
        opset = ", ".join(f"{o.domain or 'ai.onnx'}: {o.version}" for o in self._model_proto.opset_import)
        return (f"ONNXProgram(inputs={[i.name for i in graph.input]}, outputs={[o.name for o in graph.output]}, "
                f"nodes={len(graph.node)}, initializers={len(graph.initializer)}, opset={{{opset}}})")

    def save(self, destination, *, include_initializers: bool = True, keep_initializers_as_inputs: bool = False,
             external_data: bool | None = None) -> None:
        """Write the model to a path (or a binary file object).  external_data=True (or a model over 2 GB) puts
        the weights in `<destination>.data` next to it, as torch does."""
        proto = with_initializer_options(self._model_proto, include_initializers, keep_initializers_as_inputs,
                                         self._parameter_names, as_inputs_when_excluded=False)
        write(proto, destination, bool(external_data))

    def optimize(self) -> None:
        """torch runs onnxscript's optimizer here; ember's graphs are left to onnxruntime's own optimizations."""

    def initialize_inference_session(self, initializer=None) -> None:
        """Create the onnxruntime session (`initializer(model_bytes)` may build it instead)."""
        if initializer is not None:
            self._session = initializer(self._model_proto.SerializeToString())
            return
        try:
            import onnxruntime
        except ModuleNotFoundError:
            raise ModuleNotFoundError("running an ONNXProgram needs the 'onnxruntime' package "
                                      "(pip install onnxruntime)", name="onnxruntime") from None
        self._session = onnxruntime.InferenceSession(self._model_proto.SerializeToString(),
                                                     providers=["CPUExecutionProvider"])

    def release(self) -> None:
        self._session = None

    def __call__(self, *args, **kwargs) -> list:
        """Run the model on ember tensors (the same arguments the model was exported with); a list of tensors."""
        from .._compile.tracer import flatten_tensors
        from .._ops.creation import tensor as make_tensor

        if self._session is None:
            self.initialize_inference_session()
        seen, arrays = set(), []
        for _, item in flatten_tensors(args, kwargs):
            if id(item) not in seen:
                seen.add(id(item))
                arrays.append(np.asarray(item.detach()._data))
        names = [i.name for i in self._session.get_inputs()]
        if self._input_count is not None:
            names = names[: self._input_count]
        if len(arrays) != len(names):
            raise ValueError(f"ONNXProgram: the model takes {len(names)} tensor inputs ({names}), got {len(arrays)}")
        outputs = self._session.run(None, dict(zip(names, arrays)))
        return [make_tensor(np.asarray(out)) for out in outputs]


def with_initializer_options(proto, include: bool, keep_as_inputs: bool, parameter_names: set,
                             as_inputs_when_excluded: bool):
    """A copy of proto with the parameters' initializers removed (include=False; made graph inputs when
    as_inputs_when_excluded, torch's TorchScript-exporter behaviour for export_params=False) and/or every
    initializer listed as a graph input (keep_as_inputs)."""
    if include and not keep_as_inputs:
        return proto
    from onnx import ModelProto, helper

    copy = ModelProto()
    copy.CopyFrom(proto)
    graph = copy.graph
    kept, removed = [], []
    for initializer in graph.initializer:
        (removed if not include and initializer.name in parameter_names else kept).append(initializer)
    inputs = []
    if keep_as_inputs or as_inputs_when_excluded:
        listed = removed + (kept if keep_as_inputs else [])
        inputs = [helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)) for t in listed]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    graph.input.extend(inputs)
    return copy


def write(proto, destination, external_data: bool) -> None:
    """Save to a path or a binary file object; weights to `<path>.data` when asked or when over 2 GB."""
    import onnx

    if isinstance(destination, (str, os.PathLike)):
        path = os.fspath(destination)
        if external_data or proto.ByteSize() > _LARGE_MODEL:
            copy = onnx.ModelProto()
            copy.CopyFrom(proto)  # conversion to external data rewrites the proto in place
            data_path = path + ".data"
            if os.path.exists(data_path):
                os.remove(data_path)  # onnx appends to an existing data file
            onnx.save_model(copy, path, save_as_external_data=True, all_tensors_to_one_file=True,
                            location=os.path.basename(path) + ".data", size_threshold=1024)
        else:
            onnx.save_model(proto, path)
        return
    if not hasattr(destination, "write"):
        raise TypeError(
            f"ember.onnx.export: f must be a path or a binary file object, not {type(destination).__name__}")
    destination.write(proto.SerializeToString())
