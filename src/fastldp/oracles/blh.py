"""Binary local hashing (BLH): local hashing onto two buckets.

BLH is :class:`~fastldp.oracles.OLH` with ``g = 2`` buckets at every
budget: identity ``i`` hashes its symbol with its own public hash
``H_i : [D] -> {0, 1}`` (the OLH hash of ``(codebook_seed, i)``,
:func:`~fastldp.oracles.olh.olh_hash`) and reports the bit by randomized
response, keeping it with probability ``p = e^eps / (e^eps + 1)``. The
server's estimate is OLH's with ``g = 2``:
``c(v) = ([H_i(v) = y] - 1/2) / (p - 1/2)``, of variance

    sigma^2 = (1/4) / (p - 1/2)^2 = ((e^eps + 1) / (e^eps - 1))^2

at a symbol not held and ``p (1 - p) / (p - 1/2)^2 = 4 e^eps / (e^eps - 1)^2``
at the held one. Wang et al. (2017) analyse it as the first step towards
OLH: ``g = round(e^eps) + 1`` is never worse (below ``eps = ln 1.5``,
``round(e^eps) + 1 = 2`` and the two coincide). The reports are one bit, and
the server costs OLH's ``O(n D)`` hashes.

The class is a subclass of :class:`~fastldp.oracles.OLH` that fixes the
number of buckets: sampling, the server, personal budgets, exact partials,
sanitization and the attack scores are OLH's code.

References
----------
.. [1] T. Wang, J. Blocki, N. Li, S. Jha, "Locally differentially private
   protocols for frequency estimation", USENIX Security 2017, section 4.4
   (binary local hashing, then optimized local hashing).
.. [2] R. Bassily, A. Smith, "Local, private, efficient protocols for
   succinct histograms", STOC 2015 (the one-bit random-projection protocol
   BLH generalizes).
"""

from __future__ import annotations

import numpy as np

from .olh import OLH

__all__ = ["BLH"]


class BLH(OLH):
    """Binary local hashing: :class:`~fastldp.oracles.OLH` with ``g = 2`` buckets at every budget.

    Parameters
    ----------
    domain_size : int >= 2, optional
        Defaults to ``len(categories)``.
    epsilon : float in (0, 700] or None
    categories : list of labels or a pandas Categorical, optional
        Labels of the symbols (:class:`~fastldp.oracles.FrequencyOracle`).
    codebook_seed : int or None
        Seed of the per-identity hashes ``H_i`` (the same hash as OLH's).
    n_threads : int or None

    Notes
    -----
    Reports are int64 bits in ``{0, 1}``. The identities key the hashes, so
    the server must be given the same identities as the clients. A BLH
    report is the OLH report of the same identity, symbol and coins when
    OLH's ``g`` is 2 (``eps < ln 1.5``).

    Examples
    --------
    >>> import numpy as np
    >>> blh = BLH(domain_size=8, epsilon=2.0, codebook_seed=5)
    >>> reports = blh.privatize(np.arange(40_000) % 8, rng=0)
    >>> sorted(np.unique(reports).tolist())
    [0, 1]
    >>> est = blh.estimate(reports)
    >>> sigma2 = blh.variances(np.array([2.0]))[0]
    >>> bool(np.isclose(sigma2, ((np.exp(2) + 1) / (np.exp(2) - 1)) ** 2))
    True
    >>> bool(np.all(np.abs(est.counts - 5000) < 5 * est.std))
    True
    """

    name = "blh"

    def buckets(self, eps: np.ndarray) -> np.ndarray:
        """``g = 2`` for every budget (int64, the shape of ``eps``)."""
        return np.full(np.shape(eps), 2, dtype=np.int64)
