"""torchx-keras as a TorchX plugin: the ``from-keras`` command."""
