"""ember.serve.ModelServer with real HTTP clients: results, dynamic batching, errors; the CLI on an export file."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request

import numpy as np
import pytest

import ember
from ember import nn
from ember.serve import ModelServer


def _post(url: str, body) -> tuple[int, dict]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(url + "/predict", data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def _get(url: str, path: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url + path, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@pytest.fixture
def model():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 3))


def test_concurrent_requests_are_batched_and_answered_with_their_own_rows(model):
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal((n, 4)).astype(np.float32) for n in (1, 2, 3, 1, 2, 1, 3, 2)]
    with ember.no_grad():
        expected = [model(ember.from_numpy(x)).numpy() for x in inputs]
    results = [None] * len(inputs)
    with ModelServer(model, max_batch_size=64, batch_timeout_ms=300) as server:
        barrier = threading.Barrier(len(inputs))

        def client(i):
            barrier.wait()
            results[i] = _post(server.url, {"inputs": [inputs[i].tolist()]})

        threads = [threading.Thread(target=client, args=(i,)) for i in range(len(inputs))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        status, meta = _get(server.url, "/metadata")
    for (code, body), want in zip(results, expected):
        assert code == 200, body
        (out,) = body["outputs"]
        assert out["dtype"] == "float32" and out["shape"] == list(want.shape)
        np.testing.assert_allclose(np.array(out["data"], np.float32), want, rtol=1e-6, atol=1e-7)
    assert status == 200 and meta["requests_served"] == len(inputs)
    assert meta["batches_run"] < len(inputs), meta  # requests arriving together ran as fewer model calls


def test_requests_of_other_shapes_or_dtypes_are_not_batched_together():
    calls = []

    def model(x):
        calls.append(tuple(x.shape))
        return x * 2

    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((2, 5))
    with ModelServer(model, batch_timeout_ms=200) as server:
        replies = [None, None, None]
        bodies = [{"inputs": [a.tolist()]}, {"inputs": [b.tolist()]},
                  {"inputs": [{"data": a.tolist(), "dtype": "float64"}]}]
        threads = [threading.Thread(target=lambda i=i: replies.__setitem__(i, _post(server.url, bodies[i])))
                   for i in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert all(code == 200 for code, _ in replies), replies
    np.testing.assert_allclose(replies[0][1]["outputs"][0]["data"], (a * 2).astype(np.float32), rtol=1e-6)
    np.testing.assert_allclose(replies[1][1]["outputs"][0]["data"], (b * 2).astype(np.float32), rtol=1e-6)
    assert replies[2][1]["outputs"][0]["dtype"] == "float64"
    np.testing.assert_array_equal(replies[2][1]["outputs"][0]["data"], a * 2)
    assert sorted(calls) == [(2, 3), (2, 3), (2, 5)]  # three model calls: no batch mixed shapes or dtypes


def test_bad_requests_get_400_and_model_errors_500_and_the_server_keeps_serving(model):
    with ModelServer(model) as server:
        assert _post(server.url, b"{not json")[0] == 400
        assert _post(server.url, {"x": 1})[0] == 400
        code, body = _post(server.url, {"inputs": [3.0]})
        assert code == 400 and "batch dimension" in body["error"]
        code, body = _post(server.url, {"inputs": [{"data": [[1.0]], "dtype": "float99"}]})
        assert code == 400 and "float99" in body["error"]
        code, body = _post(server.url, {"inputs": [[[1.0, 2.0]]]})  # 2 features where the model wants 4
        assert code == 500 and body["error"].startswith("RuntimeError") and "4" in body["error"], body
        assert _get(server.url, "/nowhere")[0] == 404
        assert _get(server.url, "/health") == (200, {"status": "ok"})
        code, body = _post(server.url, {"inputs": [[[1.0, 2.0, 3.0, 4.0]]]})
        assert code == 200 and body["outputs"][0]["shape"] == [1, 3]


def test_outputs_without_the_batch_dim_cannot_be_split():
    def total(x):
        return x.sum()

    with ModelServer(total, batch_timeout_ms=2000) as server:
        replies = [None, None]
        barrier = threading.Barrier(2)

        def client(i):
            barrier.wait()
            replies[i] = _post(server.url, {"inputs": [[[1.0]]]})

        threads = [threading.Thread(target=client, args=(i,)) for i in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    # batched together (both arrive within the 2 s window), the server refuses to guess how to split the sum
    assert [code for code, _ in replies] == [500, 500], replies
    assert "max_batch_size=1" in replies[0][1]["error"]
    with ModelServer(total, max_batch_size=1) as server:
        code, body = _post(server.url, {"inputs": [[[1.0], [2.0]]]})
        assert code == 200 and body["outputs"][0]["data"] == 3.0


def test_cli_serves_an_export_file_without_the_model_class(tmp_path, model):
    """python -m ember.serve FILE: a separate process loads the exported graph (no Python class) and serves it."""
    import subprocess
    import sys

    x = ember.randn(3, 4)
    program = ember.export.export(model, (x,), dynamic_shapes={"input": {0: ember.export.Dim("batch")}})
    path = tmp_path / "model.pt2"
    ember.export.save(program, str(path))
    with ember.no_grad():
        want = model(x).numpy()
    process = subprocess.Popen([sys.executable, "-m", "ember.serve", str(path), "--port", "0",
                                "--batch-timeout-ms", "1"], stdout=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline()
        assert line.startswith("ember.serve: serving"), line
        url = line.split(" on ")[-1].strip()
        assert _get(url, "/health") == (200, {"status": "ok"})
        code, meta = _get(url, "/metadata")
        assert code == 200 and meta["inputs"] == [{"shape": [3, 4], "dtype": "float32"}], meta
        code, body = _post(url, {"inputs": [x.numpy().tolist()]})
        assert code == 200, body
        np.testing.assert_allclose(np.array(body["outputs"][0]["data"], np.float32), want, rtol=1e-6, atol=1e-7)
        code, body = _post(url, {"inputs": [x.numpy()[:1].tolist()]})  # another batch size: the dynamic dim
        assert code == 200 and body["outputs"][0]["shape"] == [1, 3]
    finally:
        process.terminate()
        process.wait(timeout=10)
