"""Differentiation on the DAG: reverse accumulation, forward-mode tangents, structural sparsity, simplification."""
