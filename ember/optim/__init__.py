"""ember.optim: torch.optim's optimizers, learning-rate schedulers and SWA utilities.

Each algorithm is written once, in ember ops over a whole param group (see
NOTE [ One optimizer implementation ] in _multi_tensor.py); the state_dicts
have torch's structure and key names, so checkpoints move between the two.
"""

from . import lr_scheduler, swa_utils
from ._stateless import swap_in_optimizer_params_and_state
from .adafactor import Adafactor
from .adam import Adam, Adamax, AdamW, NAdam, RAdam
from .adaptive import Adadelta, Adagrad, RMSprop, Rprop
from .lbfgs import LBFGS
from .muon import Muon
from .optimizer import Optimizer, register_optimizer_step_post_hook, register_optimizer_step_pre_hook
from .sgd import ASGD, SGD
from .sparse_adam import SparseAdam

__all__ = [
    "ASGD",
    "Adadelta",
    "Adafactor",
    "Adagrad",
    "Adam",
    "AdamW",
    "Adamax",
    "LBFGS",
    "Muon",
    "NAdam",
    "Optimizer",
    "RAdam",
    "RMSprop",
    "Rprop",
    "SGD",
    "SparseAdam",
    "lr_scheduler",
    "register_optimizer_step_post_hook",
    "register_optimizer_step_pre_hook",
    "swa_utils",
    "swap_in_optimizer_params_and_state",
]
