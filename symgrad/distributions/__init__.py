"""``sg.distributions``: ``Normal``, ``Uniform``, ``Bernoulli``, ``Categorical``, ``Exponential``, ``Laplace``,
``MultivariateNormal``, ``Gamma``, ``Chi2``, ``Beta``, ``Dirichlet``, ``StudentT``, ``Poisson``, ``Binomial``,
``LogNormal``, ``TransformedDistribution`` (with ``transforms``), ``Independent``, ``OneHotCategorical``,
``MixtureSameFamily`` (and ``kl_divergence`` for their pairs) as torch.distributions defines them:
the same parameters, shapes, ``validate_args`` checks and texts, reprs, and samples drawn through the same random
calls (``normal``, ``rand``, ``bernoulli``, ``multinomial``) on symgrad's torch-identical generator, so a seeded
program draws torch's numbers. ``log_prob``, ``entropy``, ``cdf``, ``icdf`` and ``rsample`` are tensor expressions:
their gradients are graph nodes like any other."""
from __future__ import annotations

from . import (
                    extra_kl,  # noqa: F401  (registers the KL pairs of extra's distributions)
                    transforms,
)
from .distribution import Distribution
from .extra import (
                    Beta,
                    Binomial,
                    Chi2,
                    Dirichlet,
                    Gamma,
                    Independent,
                    LogNormal,
                    MixtureSameFamily,
                    OneHotCategorical,
                    Poisson,
                    StudentT,
                    TransformedDistribution,
)
from .more import Exponential, Laplace, MultivariateNormal, kl_divergence, register_kl
from .simple import Bernoulli, Categorical, Normal, Uniform

__all__ = ["Bernoulli", "Beta", "Binomial", "Categorical", "Chi2", "Dirichlet", "Distribution", "Exponential", "Gamma",
           "Independent", "Laplace", "LogNormal", "MixtureSameFamily", "MultivariateNormal", "Normal",
           "OneHotCategorical", "Poisson", "StudentT", "TransformedDistribution", "Uniform", "kl_divergence",
           "register_kl", "transforms"]
