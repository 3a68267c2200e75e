"""``sg.nn``: torch.nn's module system (``Module``, ``Parameter``, containers, layers, losses, ``init``)
and its functional API (``import symgrad.nn.functional as F``); ``utils.functional_call`` runs a module on other
parameters (how they become arguments of a compiled function)."""
from __future__ import annotations

from . import functional, init, utils  # noqa: F401
from .hooks import RemovableHandle  # noqa: F401
from .modules import *  # noqa: F403
from .modules.module import register_module_forward_hook, register_module_forward_pre_hook  # noqa: F401
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter  # noqa: F401
