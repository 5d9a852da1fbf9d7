from torchx.core.testing import fresh_plugins  # noqa: F401 - the fixture
