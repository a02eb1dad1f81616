"""ember.nn: modules, functional, init, utils (torch.nn's API)."""

from . import functional, init, utils  # noqa: F401
from .modules import *  # noqa: F403
from .modules.module import Module  # noqa: F401
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter  # noqa: F401
from . import parallel  # noqa: F401,E402
