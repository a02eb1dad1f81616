"""torch.utils.benchmark: time Python statements with replicates, and print measurements side by side.

`Timer` runs a statement under `timeit` with warm-up, a fixed thread count and adaptive block sizes and
returns a `Measurement` (median, IQR, a repr like torch's); `Compare` lays many measurements out as a table.
The layout mirrors torch's (`benchmark.utils.common`, `.timer`, `.compare`), so deep imports resolve too.
Callgrind instruction counts, C++ statements and the fuzzers are not provided.
"""

from .utils.common import (
    Measurement,
    TaskSpec,
    ordered_unique,
    select_unit,
    set_torch_threads,
    trim_sigfig,
    unit_to_english,
)
from .utils.compare import Colorize, Compare
from .utils.timer import Language, Timer, timer

__all__ = [
    "Colorize",
    "Compare",
    "Language",
    "Measurement",
    "TaskSpec",
    "Timer",
    "ordered_unique",
    "select_unit",
    "set_torch_threads",
    "timer",
    "trim_sigfig",
    "unit_to_english",
]
