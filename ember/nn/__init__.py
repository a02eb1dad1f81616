"""ember.nn: modules, functional, init, utils (torch.nn's API)."""

from . import attention, common_types, functional, init, parallel, utils  # noqa: F401
from ._factory_kwargs import factory_kwargs  # noqa: F401
from .modules import *  # noqa: F403
from .modules.module import Module  # noqa: F401
from .parallel import DataParallel  # noqa: F401
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter  # noqa: F401
