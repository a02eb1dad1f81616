"""ep.module(): an nn.Module with the exported parameters and buffers at their original names, whose forward
runs the graph (torch's unlifted GraphModule).  No class of the original model is needed: submodules are
plain containers created from the names (`fc1.weight` makes a child `fc1`)."""

from __future__ import annotations

from ..nn.modules.module import Module
from ..nn.parameter import Parameter


class _Container(Module):
    """A submodule that only holds parameters and buffers."""

    def forward(self, *args, **kwargs):
        raise RuntimeError("a submodule of an exported program's module holds tensors only; call the top module")


def _owner(root: Module, target: str) -> tuple:
    """The submodule that holds `target` (created on the way) and the attribute name."""
    path, _, name = target.rpartition(".")
    module = root
    for part in path.split(".") if path else ():
        child = module._modules.get(part)
        if child is None:
            child = _Container()
            module.add_module(part, child)
        module = child
    return module, name


class ExportedModule(Module):
    """Runs an ExportedProgram's graph with the tensors it holds; calls take the inputs export was given
    (same structure; shapes as exported, the dynamic batch dim free)."""

    def __init__(self, program) -> None:
        super().__init__()
        object.__setattr__(self, "_exported_program", program)
        parameters = {}
        for spec in program.graph_signature.input_specs:
            if spec.kind not in ("PARAMETER", "BUFFER"):
                continue
            tensor = program._state[spec.target]
            if spec.kind == "PARAMETER" and not isinstance(tensor, Parameter):
                tensor = parameters.setdefault(id(tensor), Parameter(tensor, requires_grad=spec.requires_grad))
            for target in [spec.target] + program._aliases.get(spec.target, []):  # tied weights: one tensor
                module, name = _owner(self, target)
                if spec.kind == "PARAMETER":
                    module.register_parameter(name, tensor)
                else:
                    module.register_buffer(name, tensor, persistent=spec.persistent)
        object.__setattr__(self, "_constants", dict(program.constants))

    @property
    def code(self) -> str:
        """The graph as Python (what forward runs, op by op)."""
        return self._exported_program.graph_module.code

    @property
    def graph(self):
        return self._exported_program.graph

    def forward(self, *args, **kwargs):
        program = self._exported_program
        env = program._bind_inputs(args, kwargs)
        for spec in program.graph_signature.input_specs:
            if spec.kind == "PARAMETER":
                env[spec.name] = self.get_parameter(spec.target)
            elif spec.kind == "BUFFER":
                env[spec.name] = self.get_buffer(spec.target)
            elif spec.kind == "CONSTANT_TENSOR":
                env[spec.name] = self._constants[spec.target]
        program._execute(env, program._batch_size(env))
        return _outputs(program._output, env)

    def extra_repr(self) -> str:
        return f"exported from {self._exported_program._spec['module']}"


def _outputs(structure, env: dict):
    from ._codec import substitute

    return substitute(structure, lambda ref: env[ref.name])
