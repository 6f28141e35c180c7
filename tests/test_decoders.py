"""Decoders: global, grouped medoid, pooled, none."""

import numpy as np
import pytest

from fastldp import JPRS
from fastldp._kernels._projection import project_sparse_capped
from fastldp.relations import rate_diagnostic_population
from fastldp.relations import PaddedRelationSampling, decode, public_groups
from fastldp._sanitize import SanitizationReport
from fastldp.relations.base import RelationMechanism


class ScriptedMechanism(RelationMechanism):
    """A linear mechanism whose group estimates are given (noiseless or scripted)."""

    family = "scripted"

    def __init__(self, per_group, **kw):
        super().__init__(**kw)
        self.per_group = per_group  # callable(members mask or None) -> (p,)

    def sanitize(self, reports, eps, identities, owner):
        return np.asarray(reports), SanitizationReport(len(reports), len(reports), {})

    def linear_estimate(self, clean, eps, identities, members=None):
        return self.per_group(members)


def test_noiseless_input_decodes_to_the_projection_of_the_truth():
    rng = np.random.default_rng(0)
    truth = rng.uniform(-0.2, 1.3, 30)
    mech = ScriptedMechanism(lambda members: truth.copy(), shape=(5, 6), k=3, s=7, codebook_seed=1)
    out = decode(mech, np.zeros(40), 1.0, decoders=("global", "medoid", "pooled", "none"), n_groups=4)
    expected = project_sparse_capped(truth, 7, 3.0)[0].reshape(5, 6)
    for name in ("global", "medoid", "pooled"):
        np.testing.assert_allclose(out[name].matrix, expected, atol=1e-15)
    np.testing.assert_array_equal(out["none"].matrix, truth.reshape(5, 6))


def test_medoid_picks_the_group_closest_to_the_others_and_pooled_takes_the_median():
    n, G = 40, 4
    labels = public_groups(7, n, G)
    base = np.zeros(6)
    base[:2] = 0.5
    scripted = {0: base + [0, 0, 0.9, 0, 0, 0], 1: base.copy(), 2: base + [0, 0, 0, 0.8, 0, 0],
                3: base + [0.1, 0, 0, 0, 0, 0]}

    def per_group(members):
        if members is None:
            return base
        group = int(labels[np.flatnonzero(members)[0]])
        assert np.all(labels[members] == group)
        return np.array(scripted[group], dtype=float)

    mech = ScriptedMechanism(per_group, shape=(2, 3), k=2, s=3, codebook_seed=7)
    out = decode(mech, np.zeros(n), 1.0, decoders=("medoid", "pooled"), n_groups=G)
    assert out["medoid"].medoid_group == 1
    median = np.median(np.stack([scripted[g] for g in range(G)]), axis=0)
    np.testing.assert_allclose(out["pooled"].linear.ravel(), median)


def test_public_groups_are_balanced_deterministic_and_seeded():
    a = public_groups(3, 1003, 8)
    np.testing.assert_array_equal(a, public_groups(3, 1003, 8))
    assert not np.array_equal(a, public_groups(4, 1003, 8))
    sizes = np.bincount(a)
    assert sizes.max() - sizes.min() <= 1 and sizes.sum() == 1003


@pytest.mark.parametrize("make", [
    lambda: JPRS(shape=(8, 8), k=3, s=6, codebook_seed=5),
    lambda: PaddedRelationSampling(shape=(8, 8), k=3, s=6, oracle="olh", codebook_seed=5),
])
def test_one_call_equals_separate_calls(make):
    mech = make()
    pop = rate_diagnostic_population(shape=(8, 8), s=6, k=3, n=4000, rng=1)
    eps = np.random.default_rng(2).uniform(0.5, 1.5, 4000)
    rep = mech.privatize(pop.relations, epsilons=eps, rng=3)
    together = mech.decode(rep, eps, decoders=("global", "medoid", "pooled"), n_groups=5)
    for name in ("global", "medoid", "pooled"):
        alone = mech.decode(rep, eps, decoders=(name,), n_groups=5)[name]
        np.testing.assert_array_equal(together[name].matrix, alone.matrix)


def test_jprs_global_decoder_matches_estimate():
    mech = JPRS(shape=(8, 8), k=3, s=6, codebook_seed=5)
    pop = rate_diagnostic_population(shape=(8, 8), s=6, k=3, n=3000, rng=1)
    rep = mech.privatize(pop.relations, epsilons=1.0, rng=3)
    np.testing.assert_array_equal(mech.decode(rep, 1.0)["global"].matrix, mech.estimate(rep, epsilons=1.0).matrix)


def test_bad_decoder_and_group_count():
    mech = JPRS(shape=(8, 8), k=3, s=6, codebook_seed=5)
    rep = np.ones(10, dtype=np.int8)
    with pytest.raises(ValueError, match="'decoders' parameter of JPRS.decode must be one of"):
        mech.decode(rep, 1.0, decoders=("mean",))
    with pytest.raises(ValueError, match=r"'n_groups' parameter of JPRS.decode must be an int in \[2, 10\]"):
        mech.decode(rep, 1.0, decoders=("medoid",), n_groups=11)
