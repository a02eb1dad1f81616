"""ember.onnx.errors: the exporter's exception types, named as torch.onnx.errors names them."""

from __future__ import annotations

__all__ = ["OnnxExporterError", "OnnxExporterWarning", "SymbolicValueError", "UnsupportedOperatorError"]


class OnnxExporterWarning(UserWarning):
    """Warnings of the ONNX exporter."""


class OnnxExporterError(RuntimeError):
    """Errors raised by the ONNX exporter: the model could not be captured or translated."""


class UnsupportedOperatorError(OnnxExporterError):
    """An op of the captured graph has no ONNX translation (torch.onnx.errors.UnsupportedOperatorError).

    `name` is the op's name ('ember::gelu'); `source` the user's line that called it, when known."""

    def __init__(self, name: str, version: int, supported_version: int | None, source: str = "",
                 detail: str = "") -> None:
        if supported_version is not None:
            message = (f"Exporting the operator '{name}' to ONNX opset version {version} is not supported. Support "
                       f"for this operator was added in version {supported_version}, try exporting with this version")
        else:
            message = f"Exporting the operator '{name}' to ONNX opset version {version} is not supported"
        if detail:
            message += f": {detail}"
        if source:
            message += f"\n  (called at {source})"
        super().__init__(message)
        self.name = name
        self.version = version


class SymbolicValueError(OnnxExporterError):
    """A value of the graph cannot be expressed in ONNX (a size that depends on the inputs in an unsupported way)."""
