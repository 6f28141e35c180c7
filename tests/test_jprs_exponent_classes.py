"""JPRS's exact sums when personal budgets span several fixed-point exponents.

A block whose weights ``q_i 2^(x_i - 32)`` span few exponents goes to the
kernel in one call (``q_i 2^(x_i - min x)``, the batch bound of
``fixed_sketch``); a wider span takes one call per exponent class. Both must
give the same exact sums as partials built one class at a time (each of them
a single-exponent call) and merged: exact sums merge without rounding, so the
decodes are equal bit for bit.
"""

import numpy as np
import pytest

import fastldp
from fastldp.streaming import fixed_point_of


def _by_class_then_merged(mech, reports, eps, ids):
    _, x = fixed_point_of(np.tanh(eps * 0.5), 1)
    parts = [mech.partial(reports[x == c], eps[x == c], ids[x == c]) for c in np.unique(x)]
    total = parts[0]
    for part in parts[1:]:
        total = mech.merge(total, part)
    return mech.finalize(total), np.unique(x).size


@pytest.mark.parametrize("codebook", ["philox4x64-10", "philox4x32-10"])
@pytest.mark.parametrize("low", [0.05, 1e-7])  # spans of about 4 and 20 exponents
def test_one_call_and_per_class_sums_equal_the_merged_classes(codebook, low):
    n, shape = 2500, (6, 7)
    mech = fastldp.JPRS(shape=shape, k=3, s=10, codebook_seed=11, n_threads=2,
                        codebook=codebook)
    pop = fastldp.relations.rate_diagnostic_population(shape=shape, s=10, k=3, n=n, rng=4)
    rng = np.random.default_rng(8)
    eps = np.exp(rng.uniform(np.log(low), np.log(6.0), n))
    ids = rng.permutation(20 * n)[:n].astype(np.uint64)
    reports = mech.privatize(pop.relations, epsilons=eps, identities=ids, rng=1)
    whole = mech.estimate(reports, epsilons=eps, identities=ids)
    merged, classes = _by_class_then_merged(mech, reports, eps, ids)
    assert classes >= (4 if low > 1e-3 else 20)
    assert whole.sketch.tobytes() == merged.sketch.tobytes()
    assert whole.matrix.tobytes() == merged.matrix.tobytes()
