"""The DAG's vocabulary (nodes, dtypes, errors, the active-trace cell) and numpy-level building blocks with
torch's exact semantics (the random generator, creation ranges). Imports numpy and sympy only."""
