"""A mechanism that exists only in the tests: binary randomized response, written from numpy.

It implements :class:`fastldp.protocol.StreamingMechanism` and nothing else
of fastldp's (no family base class, no registration inside the package), so
tests/test_protocol_everywhere.py can show that report files, Dask, the
collector, the audit and the ledger take it through the protocol alone.
Another process finds it when ``FASTLDP_MECHANISMS=_protocol_mechanism`` and
this folder is on ``PYTHONPATH``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fastldp.channels import Channel, ExactLaw
from fastldp.protocol import ReportSchema
from fastldp.results import PrivacyStatement, Result

__all__ = ["BinaryRR", "YesNo"]


@dataclass(frozen=True, repr=False)
class YesNo(Result):
    """Unbiased counts of "no" and "yes"."""

    _estimate_field = "counts"
    counts: np.ndarray
    n: int
    privacy: PrivacyStatement
    categories: tuple = ("no", "yes")


class BinaryRR:
    """Randomized response on one bit, kept with probability e^eps / (e^eps + 1)."""

    kind = "counts"
    labels = ("no", "yes")

    def __init__(self, *, epsilon: float = 1.0) -> None:
        self.epsilon = float(epsilon)
        self.keep = math.exp(self.epsilon) / (math.exp(self.epsilon) + 1.0)

    def __repr__(self) -> str:
        return f"BinaryRR(epsilon={self.epsilon!r})"

    def stream_params(self) -> dict:
        return {"epsilon": self.epsilon}

    def spec(self) -> dict:
        return {"mechanism": type(self).__name__, "params": self.stream_params()}

    @property
    def report_schema(self) -> ReportSchema:
        return ReportSchema(np.int8, (), fixed_epsilon=self.epsilon)

    def privacy(self, epsilons=None) -> PrivacyStatement:
        return PrivacyStatement.local(epsilon=self.epsilon)

    def example_data(self, n, rng):
        return (rng.random(n) < 0.3).astype(np.int8)  # 30 % say yes

    def privatize(self, data, *, epsilons=None, identities=None, rng=None):
        bits = np.asarray(data, dtype=np.int8)
        flip = np.random.default_rng(rng).random(bits.shape[0]) >= self.keep
        return bits ^ flip.astype(np.int8)

    def partial(self, reports, epsilons=None, identities=None) -> dict:
        reports = np.asarray(reports)
        return {"n": int(reports.shape[0]), "ones": int(np.count_nonzero(reports == 1))}

    def merge(self, a: dict, b: dict) -> dict:
        return {"n": a["n"] + b["n"], "ones": a["ones"] + b["ones"]}

    def finalize(self, partial: dict) -> YesNo:
        n, ones = partial["n"], partial["ones"]
        yes = (ones - n * (1.0 - self.keep)) / (2.0 * self.keep - 1.0)
        return YesNo(np.array([n - yes, yes]), n, self.privacy())

    def estimate(self, reports, *, epsilons=None, identities=None) -> YesNo:
        return self.finalize(self.partial(reports))

    @classmethod
    def channels(cls, epsilon: float = 1.0) -> list:
        def law(mech, eps, identities):
            keep = math.exp(eps) / (math.exp(eps) + 1.0)
            probs = np.array([[[keep, 1 - keep], [1 - keep, keep]]])
            return ExactLaw([0, 1], [0, 1], np.zeros(1, dtype=np.uint64), probs)

        def sample(mech, eps, xs, identities, gen):
            return mech.privatize(np.asarray(xs, dtype=np.int8), rng=gen)

        real = Channel("binary-rr", "BinaryRR (a test's own mechanism), one bit", epsilon,
                       lambda eps: cls(epsilon=eps), law=law, sample=sample)
        # a faulty copy: built at 1.5 eps while claiming eps; the audit must catch it
        control = Channel("binary-rr-at-1.5x", "BinaryRR built at 1.5 eps, claiming eps",
                          epsilon, lambda eps: cls(epsilon=eps), mechanism_epsilon=1.5 * epsilon,
                          law=law, sample=sample, expect_violation=True, control_of="binary-rr")
        return [real, control]
