"""What a profile holds: one `FunctionEvent` per timed range, their averages, torch's table and Chrome trace.

The names, fields and table layout follow torch.autograd.profiler_util, so code
that reads `prof.key_averages()` or `prof.events()` keeps working; ember has no
device timeline, so every event is a CPU event and device times are zero.
"""

from __future__ import annotations

import json
import os

_US_PER_NS = 1e-3


class DeviceType:
    """torch.autograd.DeviceType's two members a CPU profile uses."""

    CPU = "CPU"
    CUDA = "CUDA"


def _format_time(time_us: float) -> str:
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def _format_time_share(time_us: float, total_us: float) -> str:
    if total_us == 0:
        return "NaN"
    return f"{time_us * 100.0 / total_us:.2f}%"


def _format_memory(nbytes: int) -> str:
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{nbytes} B"


class _TimeStrings:
    """The *_str properties torch's events carry, shared by single and averaged events."""

    @property
    def cpu_time_str(self) -> str:
        return _format_time(self.cpu_time)

    @property
    def cpu_time_total_str(self) -> str:
        return _format_time(self.cpu_time_total)

    @property
    def self_cpu_time_total_str(self) -> str:
        return _format_time(self.self_cpu_time_total)

    @property
    def device_time_total(self) -> float:
        return 0.0

    self_device_time_total = device_time = cuda_time_total = self_cuda_time_total = device_time_total
    device_memory_usage = self_device_memory_usage = 0


class FunctionEvent(_TimeStrings):
    """One timed range: an op call ("aten::add"), a backward node, or a record_function label.

    Times are perf_counter_ns readings around the real call, kept in ns and reported in us as torch does.
    """

    use_device = None
    device_type = DeviceType.CPU
    node_id = -1
    is_async = False
    is_remote = False
    is_legacy = False
    overload_name = ""
    flops = 0
    count = 1
    scope = 0

    def __init__(self, id: int, name: str, thread: int, start_ns: int, input_shapes=None, stack=None,
                 sequence_nr: int = -1, is_user_annotation: bool = False) -> None:
        self.id = id
        self.name = name
        self.thread = thread
        self.start_ns = start_ns
        self.end_ns = start_ns
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.stack = stack if stack is not None else []
        self.sequence_nr = sequence_nr
        self.is_user_annotation = is_user_annotation
        self.cpu_children: list[FunctionEvent] = []
        self.cpu_parent: FunctionEvent | None = None
        self.cpu_memory_usage = 0  # bytes allocated in the range, children included

    @property
    def key(self) -> str:
        return self.name

    @property
    def trace_name(self) -> str:
        return self.name

    @property
    def cpu_time_total(self) -> float:
        return (self.end_ns - self.start_ns) * _US_PER_NS

    cpu_time = cpu_time_total

    @property
    def self_cpu_time_total(self) -> float:
        return self.cpu_time_total - sum(child.cpu_time_total for child in self.cpu_children)

    @property
    def self_cpu_memory_usage(self) -> int:
        return self.cpu_memory_usage - sum(child.cpu_memory_usage for child in self.cpu_children)

    @property
    def time_range(self) -> tuple[float, float]:
        return (self.start_ns * _US_PER_NS, self.end_ns * _US_PER_NS)

    def __repr__(self) -> str:
        return (f"<FunctionEvent id={self.id} name={self.name} cpu_time={self.cpu_time_str} "
                f"start_us={self.start_ns * _US_PER_NS:.3f} end_us={self.end_ns * _US_PER_NS:.3f} "
                f"cpu_children={[c.id for c in self.cpu_children]} thread={self.thread} "
                f"input_shapes={self.input_shapes} cpu_memory_usage={self.cpu_memory_usage}>")


class FunctionEventAvg(_TimeStrings):
    """Events of one key summed: what `key_averages()` lists (torch.autograd.profiler_util.FunctionEventAvg)."""

    use_device = None
    device_type = DeviceType.CPU
    node_id = -1
    is_async = False
    is_remote = False
    is_legacy = False
    is_user_annotation = False
    overload_name = ""
    flops = 0
    cpu_parent = None

    def __init__(self) -> None:
        self.key: str | None = None
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.cpu_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.input_shapes = None
        self.stack: list = []
        self.cpu_children: list = []

    def add(self, event) -> FunctionEventAvg:
        if self.key is None:
            self.key = event.key
            self.input_shapes = event.input_shapes
            self.stack = event.stack
            self.is_user_annotation = event.is_user_annotation
        self.count += event.count
        self.cpu_time_total += event.cpu_time_total
        self.self_cpu_time_total += event.self_cpu_time_total
        self.cpu_memory_usage += event.cpu_memory_usage
        self.self_cpu_memory_usage += event.self_cpu_memory_usage
        return self

    __iadd__ = add

    @property
    def name(self) -> str | None:
        return self.key

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / max(self.count, 1)

    def __repr__(self) -> str:
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str} "
                f"cpu_time={self.cpu_time_str} input_shapes={self.input_shapes}>")


class EventList(list):
    """A list of events with torch's summaries: table, key_averages, total_average, export_chrome_trace."""

    def __init__(self, *args, profile_memory: bool = False, use_device=None, with_flops: bool = False) -> None:
        super().__init__(*args)
        self._profile_memory = profile_memory

    @property
    def self_cpu_time_total(self) -> float:
        return sum(event.self_cpu_time_total for event in self)

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """One FunctionEventAvg per name (and per input shapes / top stack frames when asked), in first-seen order."""
        groups: dict = {}
        for event in self:
            key = event.key
            if group_by_input_shape:
                key = (key, str(event.input_shapes))
            if group_by_stack_n:
                key = (key, tuple(event.stack[:group_by_stack_n]))
            average = groups.get(key)
            if average is None:
                average = groups[key] = FunctionEventAvg()
            average.add(event)
        for average in groups.values():  # as torch: shapes and stacks only where they were grouped on
            average.stack = average.stack[:group_by_stack_n]
            if not group_by_input_shape:
                average.input_shapes = ""
        return EventList(groups.values(), profile_memory=self._profile_memory)

    def total_average(self) -> FunctionEventAvg:
        total = FunctionEventAvg()
        for event in self:
            total.add(event)
        total.key = "Total"
        return total

    def table(self, sort_by: str | None = None, row_limit: int = 100, max_src_column_width: int = 75,
              max_name_column_width: int = 55, max_shapes_column_width: int = 80, header: str | None = None,
              top_level_events_only: bool = False, time_unit: str | None = None) -> str:
        """torch's text table (profiler_util._build_table), CPU columns only."""
        return build_table(self, sort_by, header, row_limit, max_src_column_width, max_name_column_width,
                           max_shapes_column_width, self._profile_memory, top_level_events_only, time_unit)

    def __str__(self) -> str:
        return self.table()

    def export_chrome_trace(self, path: str) -> None:
        """Write the events as Chrome trace JSON (chrome://tracing, Perfetto): one complete ("X") event each."""
        pid = os.getpid()
        trace = []
        for event in self:
            entry = {
                "ph": "X", "cat": "user_annotation" if event.is_user_annotation else "cpu_op",
                "name": event.name, "pid": pid, "tid": event.thread,
                "ts": event.start_ns * _US_PER_NS, "dur": (event.end_ns - event.start_ns) * _US_PER_NS,
                "args": {"External id": event.id},
            }
            if event.input_shapes:
                entry["args"]["Input Dims"] = event.input_shapes
            if event.sequence_nr >= 0:
                entry["args"]["Sequence number"] = event.sequence_nr
            trace.append(entry)
        document = {"schemaVersion": 1, "displayTimeUnit": "ms", "traceEvents": trace}
        with open(path, "w") as file:
            json.dump(document, file, indent=1)


def build_table(events, sort_by, header, row_limit, max_src_column_width, max_name_column_width,
                max_shapes_column_width, profile_memory, top_level_events_only, time_unit) -> str:
    """The layout of torch.autograd.profiler_util._build_table for CPU events."""
    if len(events) == 0:
        return ""
    if sort_by is not None:
        attribute = sort_by.replace("cuda", "device").replace("xpu", "device")
        events = sorted(events, key=lambda event: getattr(event, attribute), reverse=True)
    has_shapes = any(event.input_shapes for event in events)
    stacks = [event.stack for event in events if event.stack]
    name_width = min(max(len(event.key) for event in events) + 4, max_name_column_width)
    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if profile_memory:
        headers += ["CPU Mem", "Self CPU Mem"]
    headers.append("# of Calls")
    widths = [name_width] + [12] * (len(headers) - 1)
    aligns = [">"] * len(headers)
    if has_shapes:
        headers.append("Input Shapes")
        widths.append(min(max(len(str(event.input_shapes)) for event in events) + 4, max_shapes_column_width))
        aligns.append(">")
    if stacks:
        headers.append("Source Location")
        widths.append(min(max(len(entry) for stack in stacks for entry in stack) + 4, max_src_column_width))
        aligns.append("<")
    row_format = "".join("{: " + align + str(width) + "}  " for align, width in zip(aligns, widths))
    separator = "".join("-" * width + "  " for width in widths)
    line_length = sum(width + 2 for width in widths) - 2

    def time(value: float) -> str:
        scale = {"s": 1e6, "ms": 1e3, "us": 1.0}.get(time_unit)
        return _format_time(value) if scale is None else f"{value / scale:.3f}{time_unit}"

    total = sum(event.self_cpu_time_total for event in events)
    lines = []
    if header is not None:
        lines += ["=" * line_length, header]
    if top_level_events_only:
        lines += ["=" * line_length, "This report only display top-level ops statistics"]
    lines += [separator, row_format.format(*headers), separator]
    shown = 0
    for event in events:
        if shown == row_limit:
            break
        if top_level_events_only and event.cpu_parent is not None:
            continue
        shown += 1
        name = event.key
        if len(name) >= max_name_column_width - 3:
            name = name[: max_name_column_width - 3] + "..."
        row = [name, _format_time_share(event.self_cpu_time_total, total), time(event.self_cpu_time_total),
               _format_time_share(event.cpu_time_total, total), time(event.cpu_time_total), time(event.cpu_time)]
        if profile_memory:
            row += [_format_memory(event.cpu_memory_usage), _format_memory(event.self_cpu_memory_usage)]
        row.append(event.count)
        if has_shapes:
            row.append(str(event.input_shapes)[: widths[len(row)]])
        if stacks:
            source = event.stack[0] if event.stack else ""
            width = widths[-1]
            if len(source) > width:
                source = "..." + source[len(source) - width + 3:]
            row.append(source)
        lines.append(row_format.format(*row))
        if stacks:
            for entry in event.stack[1:]:
                lines.append(row_format.format(*([""] * (len(headers) - 1) + [entry[-widths[-1]:]])))
    lines += [separator, f"Self CPU time total: {time(total)}"]
    return "\n".join(lines) + "\n"
