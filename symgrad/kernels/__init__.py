"""A derived graph becomes a loaded, callable kernel: lowering to codegen's IR and the one Program pipeline."""

from . import loop_eval, loops  # noqa: F401,E402  (the scan op's lowering and eager evaluation)
