"""The torch front end: Tensor, recording, views and writes, the eager autograd engine, the sg.* functions."""
