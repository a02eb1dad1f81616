"""ember.export.save / load: one zip archive holding the graph as JSON and the tensors as safetensors.

    archive/version                     "1"
    archive/program.json                the graph: inputs, nodes (op names as registered in ember's
                                        dispatch, params as tagged JSON: ember/export/_codec.py), outputs,
                                        in-place write-backs, input structure, the dynamic batch dim
    archive/weights.safetensors         parameters and buffers, by their names in the module
    archive/constants.safetensors       lifted constant tensors (lifted_tensor_0, ...)
    archive/example_inputs.safetensors  the example inputs, by graph input name
    archive/extra/<name>                extra_files

Entries are stored uncompressed.  Nothing in the archive is pickled or executable: loading parses JSON,
reads raw little-endian arrays, and finds ops by name in ember's registry, so a new process needs ember
and nothing of the model's Python code.
"""

from __future__ import annotations

import json
import os
import zipfile

from .. import safetensors
from ..nn.parameter import Parameter
from ._capture import FORMAT_VERSION, Program
from .exported_program import ExportedProgram

_PREFIX = "archive/"


def save(ep: ExportedProgram, f, *, extra_files: dict | None = None, opset_version: dict | None = None,
         pickle_protocol: int = 2) -> None:
    """Write `ep` to `f` (a path or a writable binary file object) as a standalone zip archive.

    Args:
        ep: the program to save.
        f: a file name (str or os.PathLike) or a binary file object open for writing.
        extra_files: {name: str or bytes} stored alongside (torch.export.save's extra_files).
        opset_version, pickle_protocol: accepted for torch's signature; nothing is pickled.
    """
    if not isinstance(ep, ExportedProgram):
        raise TypeError(f"The 'ep' parameter must be an instance of 'ExportedProgram', got '{type(ep).__name__}'")
    program = ep._program
    spec = json.dumps(program.spec, allow_nan=False, indent=1)
    state = {target: ep._state[target] for target in program.state}
    entries = [
        ("version", str(FORMAT_VERSION).encode()),
        ("program.json", spec.encode("utf-8")),
        ("weights.safetensors", safetensors.save(_cpu(state))),
        ("constants.safetensors", safetensors.save(_cpu(program.constants))),
        ("example_inputs.safetensors", safetensors.save(_cpu(program.examples))),
    ]
    for name, content in (extra_files or {}).items():
        entries.append((f"extra/{name}", content.encode("utf-8") if isinstance(content, str) else bytes(content)))
    if isinstance(f, (str, os.PathLike)):
        f = os.fspath(f)
    with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_STORED) as archive:
        for name, content in entries:
            archive.writestr(_PREFIX + name, content)


def _cpu(tensors: dict) -> dict:
    return {name: tensor.detach().cpu() for name, tensor in tensors.items()}


def load(f, *, extra_files: dict | None = None, expected_opset_version: dict | None = None) -> ExportedProgram:
    """Read an ExportedProgram written by `save` from a path or a readable binary file object.

    Ops are found by name in ember's op registry; parameters come back as nn.Parameters with their
    requires_grad.  `extra_files` (a dict) gets the stored extra files' contents as str, by name.
    """
    if isinstance(f, (str, os.PathLike)):
        f = os.fspath(f)
    try:
        archive = zipfile.ZipFile(f, "r")
    except zipfile.BadZipFile as error:
        raise RuntimeError(f"ember.export.load: not an exported program archive ({error})") from None
    with archive:
        names = set(archive.namelist())
        if _PREFIX + "program.json" not in names:
            raise RuntimeError("ember.export.load: the archive has no archive/program.json (not saved by "
                               "ember.export.save?)")
        version = archive.read(_PREFIX + "version").decode().strip()
        if version != str(FORMAT_VERSION):
            raise RuntimeError(f"ember.export.load: archive format version {version}, this ember reads "
                               f"{FORMAT_VERSION}")
        spec = json.loads(archive.read(_PREFIX + "program.json").decode("utf-8"))
        state = safetensors.load(archive.read(_PREFIX + "weights.safetensors"))
        constants = safetensors.load(archive.read(_PREFIX + "constants.safetensors"))
        examples = safetensors.load(archive.read(_PREFIX + "example_inputs.safetensors"))
        if extra_files is not None:
            for name in list(extra_files):
                entry = f"{_PREFIX}extra/{name}"
                extra_files[name] = archive.read(entry).decode("utf-8") if entry in names else ""
    for item in spec["inputs"]:
        if item["kind"] == "PARAMETER":
            state[item["target"]] = Parameter(state[item["target"]], requires_grad=item["requires_grad"])
    return ExportedProgram(Program(spec, state, constants, examples))
