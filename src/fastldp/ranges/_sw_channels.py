"""The audit's channels of :class:`~fastldp.ranges.SquareWave`, and their negative controls.

- ``square-wave``: the continuous report, an empirical audit of draws under
  ``v = 0`` and ``v = 1`` (the inputs whose waves are farthest apart: every
  output has density ratio ``1`` or ``e^eps`` between them).
- ``square-wave-binned``: the report's output bin (``d' = 8`` bins), an
  exact law from the wave's formula for the inputs ``0, 1/4, ..., 1``:
  ``P(bin j | v) = q w' + (p - q) |bin j cap [v - b, v + b]|``. The server
  reads nothing but this bin, so its ratio bounds what the estimate uses.

Controls: the sampler drawing at ``2 eps`` (parameters honest) for both;
:mod:`fastldp.audit` adds a law fault of each.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..channels import Channel, ExactLaw, channels_of
from .square_wave import SquareWave

__all__ = ["BINNED_OUTPUTS", "BINNED_INPUTS", "binned_law"]

#: the binned audit's output bins and inputs
BINNED_OUTPUTS = 8
BINNED_INPUTS = (0.0, 0.25, 0.5, 0.75, 1.0)


def binned_law(mech, inputs=BINNED_INPUTS, output_bins: int = BINNED_OUTPUTS) -> ExactLaw:
    """``P(bin j | v)`` from the wave's formula (the mechanism's public ``b``, ``p``, ``q``)."""
    b, p, q = mech.b, mech.p, mech.q
    edges = np.linspace(-b, 1.0 + b, output_bins + 1)
    v = np.asarray(inputs, dtype=np.float64)[:, None]
    lo, hi = edges[None, :-1], edges[None, 1:]
    width = (1.0 + 2.0 * b) / output_bins
    overlap = np.clip(np.minimum(hi, v + b) - np.maximum(lo, v - b), 0.0, None)
    # one double for every bin the wave covers whole (and so one for the largest ratio, p / q:
    # bins whose edges round apart would give the audit near-ties of that ratio)
    overlap = np.where((lo >= v - b) & (hi <= v + b), width, overlap)
    probs = q * width + (p - q) * overlap
    return ExactLaw([float(x) for x in inputs], list(range(output_bins)),
                    np.zeros(1, dtype=np.uint64), probs[None],
                    note="binary64 probabilities from the wave's formula")


def _build(eps):
    return SquareWave(epsilon=eps, bins=BINNED_OUTPUTS)


class _LouderSquareWave(SquareWave):
    """Draws its reports as Square Wave at twice its budget (its parameters honest)."""

    def privatize(self, values, *, epsilons=None, identities=None, rng=None):
        return SquareWave(epsilon=2 * self.epsilon, bins=self.bins).privatize(values, rng=rng)


def _louder(eps):
    return _LouderSquareWave(epsilon=eps, bins=BINNED_OUTPUTS)


def _draw(mech, eps, side, size, gen):
    return mech.privatize(np.full(size, 0.0 if side == 0 else 1.0), rng=gen)


def _binned_sample(mech, eps, xs, ids, gen):
    y = mech.privatize(np.asarray(xs, dtype=np.float64), rng=gen)
    edges = np.linspace(-mech.b, 1.0 + mech.b, BINNED_OUTPUTS + 1)
    return np.clip(np.searchsorted(edges, y, side="right") - 1, 0, BINNED_OUTPUTS - 1)


@channels_of(SquareWave)
def _square_wave_channels(epsilon):
    cont = Channel("square-wave", "Square Wave report, v = 0 vs v = 1", epsilon, _build,
                   kind="empirical", draw=_draw)
    binned = Channel("square-wave-binned", f"Square Wave's output bin (d' = {BINNED_OUTPUTS}), "
                     "v in {0, .25, .5, .75, 1}", epsilon, _build,
                     law=lambda mech, eps, ids: binned_law(mech), sample=_binned_sample)
    controls = [replace(ch, name=f"control:{ch.name}-sampler", control_of=ch.name, build=_louder,
                        expect_violation=True, description=f"{ch.name}: the sampler at 2 eps "
                        "(law honest)") for ch in (cont, binned)]
    return [cont, binned, *controls]
