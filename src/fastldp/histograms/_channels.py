"""The audit's channel of the shifted-log Gaussian histograms (a zCDP claim), and its control.

The release of one count, ``n + 1`` against ``n`` (:data:`HISTOGRAM_COUNT`),
audited by threshold tests against the zCDP budget the mechanism states for
a group of ``n + 1`` (:meth:`ShiftedLogGaussian.rho`, the binary Rényi
bound of :mod:`fastldp.audit.empirical`); the negative control releases with
half the noise while it states the same budget. :class:`ShiftedLogGaussian`
answers ``channels(epsilon)`` with what is registered here
(:func:`fastldp.channels.channels_of`).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..channels import Channel, channels_of
from .mechanism import ShiftedLogGaussian

__all__ = ["HISTOGRAM_COUNT"]

#: count pair (n, n + 1) audited for the histograms
HISTOGRAM_COUNT = 10


def _histogram(eps):
    return ShiftedLogGaussian(r=0.1)


def _histogram_draw(mech, eps, side, size, gen):
    return mech.release(np.full(size, HISTOGRAM_COUNT + (1 - side)), rng=gen)


def _histogram_claim(mech):
    return float(mech.rho(HISTOGRAM_COUNT + 1))


def _half_sigma_histogram(eps):
    mech = ShiftedLogGaussian(r=0.1)
    honest_rho = mech.rho

    class HalfSigma(ShiftedLogGaussian):
        pass

    bad = HalfSigma.__new__(HalfSigma)
    bad.__dict__.update(mech.__dict__)
    bad.sigma = mech.sigma / 2          # the release uses it ...
    bad.rho = honest_rho                # ... the claim does not
    return bad


@channels_of(ShiftedLogGaussian)
def _shifted_log_gaussian_channels(epsilon):
    ch = Channel("histogram-zcdp", f"ShiftedLogGaussian(r=0.1), counts {HISTOGRAM_COUNT + 1} vs "
                 f"{HISTOGRAM_COUNT}, rho = v({HISTOGRAM_COUNT + 1})", float("nan"), _histogram,
                 kind="zcdp", draw=_histogram_draw, claim=_histogram_claim)
    return [ch, replace(ch, control_of="histogram-zcdp", name="control:histogram-half-sigma",
                        build=_half_sigma_histogram, expect_violation=True,
                        description="ShiftedLogGaussian releasing with sigma / 2, claiming v(n)")]
