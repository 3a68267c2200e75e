"""Newton-type optimisation with symgrad's exact sparse Hessian.

``scipy.optimize.minimize(method="trust-constr")`` takes ``jac=`` and ``hess=`` as they are:
the gradient is a compiled kernel, the Hessian comes back as a ``scipy.sparse`` matrix holding
only the structural non-zeros of the (tridiagonal) Rosenbrock Hessian, computed with three
Hessian-vector sweeps whatever n is.

Run: python examples/rosenbrock_trust_constr.py [n]   (default n = 100)
"""
from __future__ import annotations

import sys
import time

import numpy as np
from scipy.optimize import OptimizeResult, minimize

import symgrad as sg


@sg.compile
def rosenbrock(x):
    return (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum()


def main(n: int = 100) -> OptimizeResult:
    x0 = np.zeros(n)
    grad = sg.grad(rosenbrock)
    hess = sg.hessian(rosenbrock, sparse=True)
    pattern = rosenbrock.hessian_sparsity(x0)
    print(f"n = {n}: Hessian pattern has {pattern.nnz} structural non-zeros "
          f"({pattern.nnz / n:.2f} per row; dense would be {n * n})")
    print("the gradient symgrad derived:")
    print(sg.grad(rosenbrock).formulas(np.ones(4)))
    t0 = time.perf_counter()
    res = minimize(rosenbrock, x0, jac=grad, hess=hess, method="trust-constr",
                   options={"gtol": 1e-8, "maxiter": 5000})
    dt = time.perf_counter() - t0
    print(f"trust-constr: {res.message.strip()} after {res.nit} iterations, {dt:.2f} s")
    print(f"f(x*) = {res.fun:.3e}, max |x* - 1| = {np.abs(res.x - 1).max():.3e}")
    return res


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100)
