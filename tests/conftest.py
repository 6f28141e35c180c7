"""Shared test settings: property tests are derandomized so CI is reproducible."""

from hypothesis import settings

settings.register_profile("fastldp", derandomize=True, deadline=None, print_blob=True)
settings.load_profile("fastldp")
