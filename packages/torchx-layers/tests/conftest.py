from not_installed import not_installed, skip_every_module

if not_installed("torchx.layers"):
    pytest_pycollect_makemodule = skip_every_module(
        "torchx-layers is not installed; run: pip install torchx-layers"
    )
else:
    from torchx.core.testing import fresh_plugins  # noqa: F401 - the fixture
