"""Neighbouring-data checks: the test pattern every private estimator must pass.

A differentially private release must not let one privacy unit (a user's
whole local dataset, or one row) change

(a) the public calibration: every quantity that sets the noise (radii,
    noise scales, penalties, thresholds, flip probabilities, groups, the
    support cap...) must be a function of public parameters only, so it is
    *identical* on two neighbouring datasets, and
(b) what is possible: an output (an exception, a NaN, an empty support)
    that occurs on one dataset and never on its neighbour is an event of
    probability 0 against one of positive probability, an unbounded privacy
    loss.

The helpers build neighbours (:func:`user_neighbour`, :func:`row_neighbour`)
and run an estimator on both sides over a few seeds (:func:`compare`),
returning per side what happened; :func:`assert_neighbours` asserts (a) and
(b). Extreme values (``1e200``) are finite, so the inputs are in the data
domain (finite reals) that the estimators accept.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

#: a finite value whose squares and products overflow float64
EXTREME = 1e200

USER_KINDS = ("extreme", "fewer", "duplicated", "one-row")


def user_neighbour(X, y, users, user, kind: str, *, keep: int = 2):
    """A copy of ``(X, y, users)`` in which ``user``'s local dataset is replaced.

    ``kind``: ``"extreme"`` (its rows become +-EXTREME, its responses -+EXTREME),
    ``"fewer"`` (it keeps its first ``keep`` rows), ``"one-row"`` (its first
    row only), ``"duplicated"`` (its rows appear twice, so its count doubles).
    Every other user's rows, and the order of the rows, are unchanged.
    """
    X, y, users = np.array(X, dtype=np.float64), np.array(y, dtype=np.float64), np.array(users)
    mine = np.flatnonzero(users == user)
    if mine.size == 0:
        raise ValueError(f"no rows of user {user!r}")
    if kind == "extreme":
        signs = np.where(np.arange(mine.size * X.shape[1]).reshape(mine.size, -1) % 2, -1.0, 1.0)
        X[mine] = EXTREME * signs
        y[mine] = -EXTREME * np.where(np.arange(mine.size) % 2, -1.0, 1.0)
        return X, y, users
    if kind in ("fewer", "one-row"):
        drop = mine[(1 if kind == "one-row" else keep):]
        ok = np.ones(users.shape[0], dtype=bool)
        ok[drop] = False
        return X[ok], y[ok], users[ok]
    if kind == "duplicated":
        return (np.concatenate([X, X[mine]]), np.concatenate([y, y[mine]]),
                np.concatenate([users, users[mine]]))
    raise ValueError(f"unknown kind {kind!r}; the kinds are {USER_KINDS}")


def row_neighbour(X, y, row: int, kind: str = "extreme"):
    """A copy of ``(X, y)`` with one row replaced (sample-level neighbours).

    ``kind``: ``"extreme"`` (+-EXTREME entries, response -EXTREME) or
    ``"negated"`` (the row and its response negated).
    """
    X, y = np.array(X, dtype=np.float64), np.array(y, dtype=np.float64)
    if kind == "extreme":
        X[row] = EXTREME * np.where(np.arange(X.shape[1]) % 2, -1.0, 1.0)
        y[row] = -EXTREME
    elif kind == "negated":
        X[row], y[row] = -X[row], -y[row]
    else:
        raise ValueError(f"unknown kind {kind!r}")
    return X, y


@dataclass
class Side:
    """What one run gave: the error (type and message) or the fitted estimator's facts."""

    error: tuple | None = None
    calibration: dict = field(default_factory=dict)
    finite: bool = True
    empty_support: bool = False
    sanitized: dict = field(default_factory=dict)


def run(fit, calibration, seed) -> Side:
    """``fit(seed)`` -> estimator (or any result); ``calibration(result)`` -> dict."""
    try:
        est = fit(seed)
    except Exception as exc:  # an exception is an output too: recorded, compared
        return Side(error=(type(exc).__name__, str(exc)))
    coef = np.asarray(getattr(est, "coef_", getattr(est, "total", np.zeros(1))))
    support = getattr(est, "support_", None)
    return Side(calibration=calibration(est), finite=bool(np.isfinite(coef).all()),
                empty_support=support is not None and len(support) == 0,
                sanitized=dict(getattr(est, "sanitized_", {}) or {}))


def compare(fit_a, fit_b, calibration, seeds):
    """Run both sides over ``seeds``; returns the list of ``(seed, Side a, Side b)``."""
    return [(seed, run(fit_a, calibration, seed), run(fit_b, calibration, seed))
            for seed in seeds]


def assert_neighbours(pairs, *, require_no_error: bool = True):
    """Assert (a) identical public calibration and (b) no one-sided outputs, over all seeds.

    The calibration of a seed is compared between the two sides; an error
    must be the same on both sides (and, with ``require_no_error``, absent);
    ``coef_`` must be finite on both; and an empty support must not occur on
    one side only (over all the seeds together).

    A calibration may hold a key ``"given"``: ``(condition, values)`` for the
    quantities that are public functions of an earlier private *output*
    (U2R's radii depend on the size ``s`` of the released support). They are
    compared on the seeds whose ``condition`` agrees on both sides, and at
    least one seed must agree (else the check would be vacuous).
    """
    empty = [0, 0]
    given = [0, 0]  # seeds with a conditional part, seeds where it was compared
    for seed, a, b in pairs:
        assert a.error == b.error, f"seed {seed}: errors differ: {a.error} vs {b.error}"
        if require_no_error:
            assert a.error is None, f"seed {seed}: {a.error}"
        if a.error is not None:
            continue
        ca, cb = dict(a.calibration), dict(b.calibration)
        ga, gb = ca.pop("given", None), cb.pop("given", None)
        assert ca == cb, (
            f"seed {seed}: the public calibration differs between neighbours:\n{ca}\nvs\n{cb}")
        if ga is not None:
            given[0] += 1
            if ga[0] == gb[0]:
                given[1] += 1
                assert ga[1] == gb[1], (
                    f"seed {seed}: given {ga[0]}, the calibration differs: {ga[1]} vs {gb[1]}")
        assert a.finite and b.finite, f"seed {seed}: non-finite output (a: {a.finite}, b: {b.finite})"
        empty[0] += a.empty_support
        empty[1] += b.empty_support
    assert given[0] == 0 or given[1] > 0, "no seed agreed on the condition of 'given'"
    assert (empty[0] == 0) == (empty[1] == 0), (
        f"an empty support occurs on one side only: {empty[0]} vs {empty[1]} of {len(pairs)}")
