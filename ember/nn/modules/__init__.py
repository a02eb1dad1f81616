"""nn modules, one file per layer family."""

# torch's per-file modules whose classes ember defines in another layer-family file (nn.modules.batchnorm._BatchNorm)
from . import batchnorm, channelshuffle, distance, fold, instancenorm, padding, pixelshuffle, upsampling  # noqa: E402,F401,I001
from .activation import *  # noqa: F403
from .adaptive import *  # noqa: F403
from .container import *  # noqa: F403
from .conv import *  # noqa: F403
from .dropout import *  # noqa: F403
from .flatten import *  # noqa: F403
from .lazy import LazyModuleMixin  # noqa: F401
from .linear import *  # noqa: F403
from .linear_cross_entropy_options import LinearCrossEntropyOptions  # noqa: F401
from .loss import *  # noqa: F403
from .misc import *  # noqa: F403
from .module import Module  # noqa: F401
from .normalization import *  # noqa: F403
from .pooling import *  # noqa: F403
from .rnn import *  # noqa: F403
from .sparse import *  # noqa: F403
from .transformer import *  # noqa: F403
