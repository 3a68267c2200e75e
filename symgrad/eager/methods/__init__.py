"""``Tensor``'s methods, one mixin per family; ``eager.tensor.Tensor`` is their sum."""
