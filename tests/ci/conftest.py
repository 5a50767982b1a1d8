"""The real Azure CLI's parser (tests/support/real_az.py) as a fixture of the .ci/ script tests."""

from tests.support.real_az import real_az  # noqa: F401  (a fixture, used by name)
