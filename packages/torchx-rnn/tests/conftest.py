from not_installed import not_installed, skip_every_module

if not_installed("torchx.rnn"):
    pytest_pycollect_makemodule = skip_every_module(
        "torchx-rnn is not installed; run: pip install torchx-rnn"
    )
else:
    from torchx.core.testing import fresh_plugins  # noqa: F401 - the fixture
