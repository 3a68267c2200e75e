"""A derived graph becomes a loaded, callable kernel: lowering to codegen's IR and the one Program pipeline."""
