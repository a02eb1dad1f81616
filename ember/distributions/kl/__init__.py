"""kl_divergence and register_kl: KL(p || q) looked up by the (type(p), type(q)) pair, with torch's registered
pairs (torch.distributions.kl), the pairs in two modules."""

from . import _mixed, _same  # noqa: F401  (imported for their registrations)
from ._mixed import _add_kl_info
from ._registry import _KL_MEMOIZE, _KL_REGISTRY, _dispatch_kl, kl_divergence, register_kl

__all__ = ["register_kl", "kl_divergence"]
_ = (_KL_MEMOIZE, _KL_REGISTRY, _dispatch_kl, _add_kl_info)
