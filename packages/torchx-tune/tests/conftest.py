from not_installed import not_installed, skip_every_module

# Its tests need Optuna too, which torchx-tune brings.
if not_installed("torchx.tune"):
    pytest_pycollect_makemodule = skip_every_module(
        "torchx-tune is not installed; run: pip install torchx-tune"
    )
