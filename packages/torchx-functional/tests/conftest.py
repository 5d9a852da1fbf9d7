from not_installed import not_installed, skip_every_module

if not_installed("torchx.functional"):
    pytest_pycollect_makemodule = skip_every_module(
        "torchx-functional is not installed; run: pip install torchx-functional"
    )
else:
    from torchx.core.testing import fresh_plugins  # noqa: F401 - the fixture
