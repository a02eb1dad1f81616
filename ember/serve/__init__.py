"""A model server: a model behind HTTP, with requests arriving together run as one batch.

    server = ember.serve.ModelServer(model, port=8080, max_batch_size=32, batch_timeout_ms=5)
    server.start()            # a background thread; server.url is where it listens
    ...
    server.stop()

    python -m ember.serve model.ember --port 8080      # an ember.export file, no Python model class needed

Endpoints (JSON):
    GET  /health     {"status": "ok"}
    GET  /metadata   the model's name, its inputs' shapes and dtypes when known (an exported program's example
                     inputs), max_batch_size, and counters (requests, batches run)
    POST /predict    {"inputs": [x, ...]} -> {"outputs": [y, ...]}; each x is a nested list (float32 for floats,
                     int64 for ints, as ember.tensor infers) or {"data": nested list, "dtype": "float16", ...};
                     each y is {"data": nested list, "dtype": ..., "shape": [...]}

Batching (NOTE [ Dynamic batching ]): every request's inputs carry a leading batch dim.  A worker thread takes
the first waiting request, then waits up to `batch_timeout_ms` for more whose inputs match it in count, dtype
and trailing shape, concatenates them along dim 0 (up to `max_batch_size` rows), runs the model once under
inference_mode, and splits every output back along dim 0 by each request's row count.  A model whose outputs
do not keep the batch dim (a reduction over the batch) is run per request: set `max_batch_size=1`.  Requests
that do not match wait for the next batch; one failing request fails only its own batch, answered with the
error's type and message (HTTP 500; malformed requests get 400).

The HTTP side is the standard library's ThreadingHTTPServer: one thread per connection parses JSON and
waits on its request's result, the model runs on the worker thread only.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from concurrent.futures import Future
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from .. import _dtype as dt
from .._autograd.grad_mode import inference_mode
from .._tensor import Tensor

__all__ = ["ModelServer", "BadRequest"]


class BadRequest(ValueError):
    """A request the server cannot run (malformed JSON, wrong input count, a dtype name it does not know)."""


def _tensor_from_json(value) -> Tensor:
    from .. import tensor

    if isinstance(value, dict):
        if "data" not in value:
            raise BadRequest("an input given as an object needs a 'data' field")
        name = value.get("dtype")
        dtype = None
        if name is not None:
            dtype = getattr(dt, name, None) if isinstance(name, str) else None
            if not isinstance(dtype, dt.dtype):
                raise BadRequest(f"unknown dtype {name!r}")
        return tensor(value["data"], dtype=dtype)
    return tensor(value)


def _tensor_to_json(value: Tensor) -> dict:
    data = value.detach()
    if data.dtype == dt.bfloat16:
        data = data.float()
    return {"data": data.tolist(), "dtype": value.dtype.name if hasattr(value.dtype, "name") else str(value.dtype),
            "shape": list(value.shape)}


def _outputs_of(result) -> list:
    if isinstance(result, Tensor):
        return [result]
    if isinstance(result, (list, tuple)) and all(isinstance(r, Tensor) for r in result):
        return list(result)
    raise TypeError(f"the model returned {type(result).__name__}; a server needs a Tensor or a tuple of Tensors")


class _Request:
    __slots__ = ("inputs", "rows", "key", "future")

    def __init__(self, inputs: list) -> None:
        if not inputs or any(t.ndim == 0 for t in inputs):
            raise BadRequest("inputs need a leading batch dimension (got a 0-d input or none)")
        rows = inputs[0].shape[0]
        if any(t.shape[0] != rows for t in inputs):
            raise BadRequest(f"inputs disagree on the batch size: {[t.shape[0] for t in inputs]}")
        self.inputs = inputs
        self.rows = rows
        # requests batch together only when everything but the batch dim matches
        self.key = tuple((t.dtype, tuple(t.shape[1:])) for t in inputs)
        self.future: Future = Future()


class ModelServer:
    """Serve `model` (an nn.Module or any callable on tensors) over HTTP; see the module docstring."""

    def __init__(self, model, host: str = "127.0.0.1", port: int = 0, *, max_batch_size: int = 32,
                 batch_timeout_ms: float = 5.0, metadata: dict | None = None) -> None:
        if max_batch_size < 1:
            raise ValueError(f"max_batch_size must be at least 1, got {max_batch_size}")
        self.model = model
        if hasattr(model, "eval"):
            model.eval()
        self.max_batch_size = max_batch_size
        self.batch_timeout = batch_timeout_ms / 1000.0
        self.metadata = dict(metadata or {})
        self.requests_served = 0
        self.batches_run = 0
        self._queue: queue.Queue = queue.Queue()
        self._held: list = []  # requests taken from the queue that did not fit the last batch
        self._stopping = threading.Event()
        self._httpd = ThreadingHTTPServer((host, port), _handler_for(self))
        self._httpd.daemon_threads = True
        self._threads: list = []

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> ModelServer:
        """Serve on background threads (returns at once)."""
        self._threads = [threading.Thread(target=self._httpd.serve_forever, name="ember-serve-http", daemon=True),
                         threading.Thread(target=self._work, name="ember-serve-model", daemon=True)]
        for thread in self._threads:
            thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve on this thread until interrupted (the model worker runs on a background thread)."""
        worker = threading.Thread(target=self._work, name="ember-serve-model", daemon=True)
        worker.start()
        try:
            self._httpd.serve_forever()
        finally:
            self._stopping.set()

    def stop(self) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        for thread in self._threads:
            thread.join(timeout=5)

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # ------------------------------------------------------------ the model worker

    def predict(self, inputs: list) -> list:
        """Run one request through the batching queue and wait for its outputs (what POST /predict does)."""
        request = _Request(inputs)
        self._queue.put(request)
        return request.future.result()

    def _next(self, timeout):
        if self._held:
            return self._held.pop(0)
        return self._queue.get(timeout=timeout)

    def _work(self) -> None:
        while not self._stopping.is_set():
            try:
                first = self._next(timeout=0.1)
            except queue.Empty:
                continue
            batch = [first]
            rows = first.rows
            deadline = time.monotonic() + self.batch_timeout
            skipped = []
            while rows < self.max_batch_size:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                try:
                    candidate = self._queue.get(timeout=remaining)
                except queue.Empty:
                    break
                if candidate.key == first.key and rows + candidate.rows <= self.max_batch_size:
                    batch.append(candidate)
                    rows += candidate.rows
                else:
                    skipped.append(candidate)
            self._held.extend(skipped)
            self._run(batch)

    def _run(self, batch: list) -> None:
        from .. import cat

        try:
            with inference_mode():
                if len(batch) == 1:
                    inputs = batch[0].inputs
                else:
                    inputs = [cat([r.inputs[i] for r in batch]) for i in range(len(batch[0].inputs))]
                outputs = _outputs_of(self.model(*inputs))
                if len(batch) > 1 and any(o.ndim == 0 or o.shape[0] != sum(r.rows for r in batch) for o in outputs):
                    raise RuntimeError("the model's outputs do not keep the batch dimension, so a batch of requests "
                                       "cannot be split back; serve it with max_batch_size=1")
            self.batches_run += 1
            if len(batch) == 1:  # nothing to split (the outputs may even lack a batch dim)
                batch[0].future.set_result(outputs)
                self.requests_served += 1
                return
            start = 0
            for request in batch:
                request.future.set_result([o[start:start + request.rows] for o in outputs])
                start += request.rows
                self.requests_served += 1
        except Exception as error:  # noqa: BLE001 - the error goes back to the batch's clients
            for request in batch:
                request.future.set_exception(error)

    def describe(self) -> dict:
        return {**self.metadata, "model": type(self.model).__name__, "max_batch_size": self.max_batch_size,
                "requests_served": self.requests_served, "batches_run": self.batches_run}


def _handler_for(server: ModelServer):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format, *args) -> None:  # noqa: A002 - the base class's name
            pass  # quiet by default; a front end logs requests

        def _reply(self, status: int, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path == "/health":
                self._reply(200, {"status": "ok"})
            elif self.path == "/metadata":
                self._reply(200, server.describe())
            else:
                self._reply(404, {"error": f"no such endpoint: GET {self.path}"})

        def do_POST(self) -> None:
            if self.path != "/predict":
                self._reply(404, {"error": f"no such endpoint: POST {self.path}"})
                return
            try:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"null")
                if not isinstance(body, dict) or not isinstance(body.get("inputs"), list):
                    raise BadRequest('the body must be a JSON object {"inputs": [...]}')
                inputs = [_tensor_from_json(x) for x in body["inputs"]]
                request = _Request(inputs)
            except (BadRequest, ValueError, TypeError, RuntimeError) as error:
                self._reply(400, {"error": f"{type(error).__name__}: {error}"})
                return
            server._queue.put(request)
            try:
                outputs = request.future.result()
            except Exception as error:  # noqa: BLE001 - reported to the client
                self._reply(500, {"error": f"{type(error).__name__}: {error}"})
                return
            self._reply(200, {"outputs": [_tensor_to_json(o) for o in outputs]})

    return Handler
