"""``sg.distributions``: ``Normal``, ``Uniform``, ``Bernoulli``, ``Categorical``, ``Exponential``, ``Laplace``,
``MultivariateNormal`` (and ``kl_divergence`` for their pairs) as torch.distributions defines them:
the same parameters, shapes, ``validate_args`` checks and texts, reprs, and samples drawn through the same random
calls (``normal``, ``rand``, ``bernoulli``, ``multinomial``) on symgrad's torch-identical generator, so a seeded
program draws torch's numbers. ``log_prob``, ``entropy``, ``cdf``, ``icdf`` and ``rsample`` are tensor expressions:
their gradients are graph nodes like any other."""
from __future__ import annotations

from .distribution import Distribution
from .more import Exponential, Laplace, MultivariateNormal, kl_divergence, register_kl
from .simple import Bernoulli, Categorical, Normal, Uniform

__all__ = ["Bernoulli", "Categorical", "Distribution", "Exponential", "Laplace", "MultivariateNormal", "Normal",
           "Uniform", "kl_divergence", "register_kl"]
