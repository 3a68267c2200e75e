"""torch.nn's module classes."""
from __future__ import annotations

from .activation import (
    CELU,
    ELU,
    GELU,
    GLU,
    SELU,
    Hardshrink,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    LeakyReLU,
    LogSigmoid,
    LogSoftmax,
    Mish,
    PReLU,
    ReLU,
    ReLU6,
    Sigmoid,
    SiLU,
    Softmax,
    Softmax2d,
    Softmin,
    Softplus,
    Softshrink,
    Softsign,
    Tanh,
    Tanhshrink,
    Threshold,
)
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .distance import CosineSimilarity, PairwiseDistance
from .dropout import Dropout, Dropout1d, Dropout2d, Dropout3d
from .flatten import Flatten, Unflatten
from .linear import Bilinear, Identity, Linear
from .loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CosineEmbeddingLoss,
    CrossEntropyLoss,
    GaussianNLLLoss,
    HingeEmbeddingLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MarginRankingLoss,
    MSELoss,
    MultiLabelMarginLoss,
    MultiLabelSoftMarginLoss,
    MultiMarginLoss,
    NLLLoss,
    PoissonNLLLoss,
    SmoothL1Loss,
    SoftMarginLoss,
    TripletMarginLoss,
)
from .module import Module
from .normalization import GroupNorm, LayerNorm, RMSNorm
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from .sparse import Embedding
from .transformer import (
    MultiheadAttention,
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)

__all__ = ["Module", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict", "Identity",
           "Linear", "Bilinear", "Flatten", "Unflatten", "Embedding", "Dropout", "ReLU", "Sigmoid", "Tanh",
           "Softmax", "LogSoftmax", "Softplus", "SiLU", "GELU", "ELU", "LeakyReLU", "LogSigmoid", "Hardtanh",
           "ReLU6", "Mish", "L1Loss", "MSELoss", "SmoothL1Loss", "HuberLoss", "BCELoss", "BCEWithLogitsLoss",
           "NLLLoss", "CrossEntropyLoss", "KLDivLoss", "LayerNorm", "RMSNorm", "GroupNorm", "BatchNorm1d",
           "BatchNorm2d", "BatchNorm3d", "RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell",
           "GRUCell", "SELU", "CELU", "Hardsigmoid", "Hardswish", "Softshrink", "Hardshrink", "Threshold",
           "Softsign", "Tanhshrink", "Softmin", "Softmax2d", "GLU", "PReLU", "MarginRankingLoss",
           "HingeEmbeddingLoss", "SoftMarginLoss", "CosineEmbeddingLoss", "TripletMarginLoss", "GaussianNLLLoss",
           "PoissonNLLLoss", "PairwiseDistance", "CosineSimilarity"]
__all__ += ["MultiheadAttention", "Transformer", "TransformerDecoder", "TransformerDecoderLayer",
            "TransformerEncoder", "TransformerEncoderLayer"]  # modules/transformer.py
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d  # noqa: E402
from .pooling import *  # noqa: E402, F403  (pooling, upsampling, pixel shuffle, padding modules)
from .pooling import __all__ as _pooling_all  # noqa: E402

__all__ += ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", *_pooling_all,
            "Dropout1d", "Dropout2d", "Dropout3d"]
from .instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d  # noqa: E402
from .lazy import LazyConv1d, LazyConv2d, LazyConv3d, LazyLinear  # noqa: E402

__all__ += ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LazyLinear", "LazyConv1d", "LazyConv2d",
            "LazyConv3d", "MultiMarginLoss",
            "MultiLabelMarginLoss", "MultiLabelSoftMarginLoss"]
from .adaptive import AdaptiveLogSoftmaxWithLoss  # noqa: E402
from .ctc import CTCLoss  # noqa: E402
from .embedding_bag import EmbeddingBag  # noqa: E402

__all__ += ["EmbeddingBag", "CTCLoss", "AdaptiveLogSoftmaxWithLoss"]
from .extra import *  # noqa: E402, F403  (LocalResponseNorm, AlphaDropout, ChannelShuffle, LazyBatchNorm*d, ...)
from .extra import __all__ as _extra_all  # noqa: E402

__all__ += _extra_all
