"""Shared test settings: property tests are derandomized so CI is reproducible.

The fuzz suite (tests/test_fuzz_*.py) fixes its example counts per test with
:func:`fuzz`, so it fits its CI budget (under a minute on two cores);
``HYPOTHESIS_PROFILE=fastldp-fuzz-long`` multiplies every count by 20 for an
on-demand deep run.
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile("fastldp", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("fastldp-fuzz-long", parent=settings.get_profile("fastldp"))
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "fastldp"))

_FUZZ_SCALE = 20 if os.environ.get("HYPOTHESIS_PROFILE") == "fastldp-fuzz-long" else 1


def fuzz(max_examples: int):
    """Settings of one fuzz property: ``max_examples`` (times the long profile's scale)."""
    return settings(max_examples=max_examples * _FUZZ_SCALE,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
