"""Tracing and compiled transforms: CompiledFunction, grad / value_and_grad / jacobian / hessian, custom rules."""
