"""Reference programs whose generated kernel source is checked in: a compiler change shows as a readable diff.

Regenerate after an intended change with EMBER_UPDATE_CORPUS=1 python -m pytest tests/compile/test_corpus.py
"""

import os
import re
from pathlib import Path

import pytest

import ember
import ember.nn.functional as F
from ember._compile import codegen, fusion
from ember._compile.frontend import CompiledFunction

CORPUS = Path(__file__).parent / "corpus"


def _mlp_step(x, y, w1, b1, w2, b2):
    # NLL written with gather: F.cross_entropy checks target bounds with .item(), a graph break
    h = F.relu(F.linear(x, w1, b1))
    logp = F.log_softmax(F.linear(h, w2, b2), -1)
    return -logp.gather(1, y.unsqueeze(1)).mean()


def _block(x, w, b):
    return x + F.gelu(F.layer_norm(x, (x.shape[-1],), w, b))


def _softmax(x):
    return ember.softmax(x, -1)


def _manual_softmax_scaled(x, scale):
    z = x * scale
    e = (z - z.amax(-1, keepdim=True)).exp()
    return e / e.sum(-1, keepdim=True)


def _programs():
    g = ember.Generator().manual_seed(0)
    return {
        "mlp_step": (_mlp_step, (ember.randn(8, 16, generator=g), ember.randint(0, 4, (8,), generator=g),
                                 ember.randn(32, 16, generator=g), ember.randn(32, generator=g),
                                 ember.randn(4, 32, generator=g), ember.randn(4, generator=g))),
        "layernorm_gelu_residual": (_block, (ember.randn(2, 4, 64, generator=g), ember.randn(64, generator=g),
                                             ember.randn(64, generator=g))),
        "softmax": (_softmax, (ember.randn(16, 128, generator=g),)),
        "manual_softmax_scaled": (_manual_softmax_scaled, (ember.randn(16, 128, generator=g), 0.125)),
    }


@pytest.mark.parametrize("name", sorted(_programs()))
def test_generated_source_matches_corpus(name):
    fn, args = _programs()[name]
    compiled = CompiledFunction(fn)
    compiled(*args)
    (entry,) = compiled.cache.values()
    graph = entry.compiled.graph
    kernels = [g.kernel for g in entry.compiled.groups]
    code = re.sub(r"  test_corpus\.py:\d+  \|.*", "", graph.code)  # source lines would churn with this file
    text = f"# {name}: graph after fusion\n" + "\n".join("# " + line for line in code.splitlines()) + "\n\n"
    text += codegen.C_HEADER + "\n" + "\n".join(codegen.CPrinter().source(k) for k in kernels)
    path = CORPUS / f"{name}.c"
    if os.environ.get("EMBER_UPDATE_CORPUS") == "1" or not path.exists():
        path.write_text(text)
    assert path.read_text() == text, f"generated source for {name} changed; see {path} (EMBER_UPDATE_CORPUS=1)"
    assert fusion  # the module whose output this pins
