"""placeholder"""
class Formula: pass
def formula(*a): pass
def grad_formula(*a): pass
