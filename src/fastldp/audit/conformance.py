"""Conformance tests: does the protocol's view satisfy the assumptions of its accounting?

An ``(eps, delta)`` lower bound (:mod:`fastldp.audit.empirical`) can only
refute a claim whose violation is visible in ``1 / N`` of the draws. The
shuffle accounting rests on assumptions about the view that are much easier
to test than the claim itself: the noise has the plan's law, the shares are
uniform, the shuffler is a uniform permutation. A violated assumption does
not by itself refute the claim, but it voids the proof of it, and a test of
it has power where a lower bound has none. The protocol's family says which
assumption each test checks (for the shuffle protocols,
``fastldp/regression/_shuffle_channels.py``) and runs the tests, which live
in :mod:`fastldp.channels` because a family's checks call them (they are
re-exported here).

Every statistical test returns a p-value computed under the assumption
(the *null*); the audit fixes the seed, counts its tests and compares each
p-value with ``ALPHA / (number of tests in the row)`` (Bonferroni), so an
honest protocol fails a row with probability below ``ALPHA = 1e-6``
whatever the dependence between the tests. A deterministic check (an exact
computation on the public parameters) has no p-value and decides by itself.
"""

from __future__ import annotations

from ..channels import Check, binomial_test, chi2_uniform, mean_test, variance_test

__all__ = ["Check", "chi2_uniform", "binomial_test", "mean_test", "variance_test"]
