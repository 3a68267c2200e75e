"""``sg.optim``: torch.optim's optimizers and learning-rate schedulers, bit-identical to torch's CPU steps.

>>> import symgrad as sg
>>> w = sg.tensor([1.0, -2.0], requires_grad=True)
>>> opt = sg.optim.SGD([w], lr=0.1, momentum=0.9)
>>> (w ** 2).sum().backward()
>>> opt.step()
>>> w
tensor([ 0.8000, -1.6000], requires_grad=True)
"""
from __future__ import annotations

from . import lr_scheduler, swa_utils  # noqa: F401
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam
from .adamax import Adamax
from .adamw import AdamW
from .asgd import ASGD
from .lbfgs import LBFGS
from .nadam import NAdam
from .optimizer import Optimizer, register_optimizer_step_post_hook, register_optimizer_step_pre_hook
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "NAdam", "RAdam", "Adamax",
           "Rprop", "ASGD", "LBFGS", "lr_scheduler", "swa_utils",
           "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook"]
