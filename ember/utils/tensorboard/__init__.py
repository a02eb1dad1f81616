"""torch.utils.tensorboard: write TensorBoard event files (scalars, histograms, images, text, hparams, embeddings).

Needs the `tensorboard` package (`pip install 'ember[tensorboard]'`), whose protobufs and event-file writer do
the encoding, exactly as torch's module does; without it this import fails with ModuleNotFoundError, the error
torch gives, worded to say what to install.  Images need Pillow and `add_figure` needs matplotlib, as in torch.
"""

try:
    import tensorboard
except ImportError as error:
    raise ModuleNotFoundError(
        "No module named 'tensorboard': ember.utils.tensorboard (torch.utils.tensorboard) writes event files with "
        "the tensorboard package; install it with `pip install tensorboard` (or `pip install 'ember[tensorboard]'`)",
        name="tensorboard",
    ) from error


def _version_tuple(text: str) -> tuple[int, ...]:
    parts = []
    for piece in text.split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


if not hasattr(tensorboard, "__version__") or _version_tuple(tensorboard.__version__) < (1, 15):
    raise ImportError("TensorBoard logging requires TensorBoard version 1.15 or above")

del tensorboard

from tensorboard.summary.writer.record_writer import RecordWriter  # noqa: E402

from .writer import FileWriter, SummaryWriter  # noqa: E402

__all__ = ["FileWriter", "RecordWriter", "SummaryWriter"]
