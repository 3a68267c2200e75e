"""The DAG's vocabulary: nodes, dtypes, errors and the active-trace cell. Imports numpy and sympy only."""
