"""Section 8 populations: synthetic generators and the Commerce / Clothing loaders."""

import gzip
import json
import math
import os

import numpy as np
import pytest
from scipy.stats import truncnorm

from fastldp.vectors.datasets import (
    cap_items,
    frequency_vectors,
    load_clothing_fit,
    load_commerce,
    signed_vectors,
    truncated_normal_vectors,
    value_means,
)

SHARED = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data")
COMMERCE = os.path.join(SHARED, "womens-clothing-reviews")
CLOTHING = os.path.join(SHARED, "clothing-fit")


@pytest.mark.parametrize("gen", [frequency_vectors, signed_vectors, truncated_normal_vectors])
@pytest.mark.parametrize("d", [10, 40])  # the two samplers: priorities, and rejection when 4m <= d
def test_every_user_holds_m_distinct_uniform_keys(gen, d):
    n, m = 20_000, 4
    v = gen(n=n, d=d, m=m, rng=0)
    assert v.n == n and v.d == d and (v.sizes == m).all()
    rows = v.indices.reshape(n, m)
    assert (np.diff(rows, axis=1) > 0).all()  # sorted, distinct
    p = m / d
    assert np.abs(v.frequencies() - p).max() < 5 * math.sqrt(p * (1 - p) / n)
    again = gen(n=n, d=d, m=m, rng=0)
    np.testing.assert_array_equal(v.indices, again.indices)
    np.testing.assert_array_equal(v.values, again.values)


def test_value_rules_of_section_8_1():
    f = frequency_vectors(n=100, d=7, m=3, rng=1)
    assert (f.values == 1).all()
    s = signed_vectors(n=2000, d=7, m=3, rng=1)
    assert np.array_equal(value_means(s), np.where(np.arange(1, 8) <= 3.5, -1.0, 1.0))
    np.testing.assert_allclose(s.mean(), value_means(s) * s.frequencies())


def test_truncated_normal_values_follow_the_truncated_law():
    sigma = 0.2
    v = truncated_normal_vectors(n=50_000, d=10, m=4, sigma=sigma, rng=2)
    assert v.values.min() >= -1 and v.values.max() <= 1
    law = truncnorm(-1 / sigma, 1 / sigma, scale=sigma)
    sd = law.std()
    assert abs(v.values.mean()) < 5 * sd / math.sqrt(v.values.size)
    assert abs(v.values.std() - sd) < 5 * sd / math.sqrt(v.values.size)
    wide = truncated_normal_vectors(n=20_000, d=10, m=4, sigma=2.0, rng=3).values
    frac = (np.abs(wide) > 0.5).mean()
    expect = 1 - (truncnorm(-0.5, 0.5).cdf(0.25) - truncnorm(-0.5, 0.5).cdf(-0.25))
    assert abs(frac - expect) < 5 * math.sqrt(expect * (1 - expect) / wide.size)


@pytest.mark.parametrize("kwargs,match", [
    ({"m": 11}, r"'m' parameter of frequency_vectors must be an int in \[1, 10\]"),
    ({"n": 0}, r"'n' parameter of frequency_vectors"),
    ({"d": 0}, r"'d' parameter of frequency_vectors"),
])
def test_generator_errors(kwargs, match):
    base = {"n": 5, "d": 10, "m": 3}
    base.update(kwargs)
    with pytest.raises(ValueError, match=match):
        frequency_vectors(**base)
    with pytest.raises(ValueError, match=r"'sigma' parameter of truncated_normal_vectors"):
        truncated_normal_vectors(n=5, d=10, m=3, sigma=0)


@pytest.mark.skipif(not os.path.isdir(COMMERCE), reason="shared data not present")
def test_commerce_loader_reads_the_shared_file():
    ds = load_commerce(COMMERCE)
    assert (ds.n, ds.d, ds.m) == (23_486, 1_206, 1)
    assert set(np.unique(ds.vectors.values)) == {0.2, 0.4, 0.6, 0.8, 1.0}
    assert ds.item_ids[0] == "0" and ds.item_ids[-1] == "1205"


def test_commerce_loader_on_a_small_csv(tmp_path):
    text = ',Clothing ID,Age,Title,Review Text,Rating\n0,12,30,,"a, b",4\n1,3,40,t,x,5\n2,12,41,,,0\n3,,1,,,3\n'
    path = tmp_path / "reviews.csv"
    path.write_text(text)
    ds = load_commerce(path)
    assert (ds.n, ds.d, ds.n_skipped) == (2, 2, 2)
    assert ds.item_ids.tolist() == ["3", "12"]  # numeric order
    np.testing.assert_allclose(ds.vectors.to_dense(), [[0, 0.8], [1.0, 0]])
    with pytest.raises(FileNotFoundError):
        load_commerce(tmp_path / "missing.csv")


@pytest.mark.skipif(not os.path.isdir(CLOTHING), reason="shared data not present")
def test_clothing_loader_reads_the_shared_samples():
    ds = load_clothing_fit(CLOTHING, rng=0)
    assert (ds.n, ds.d, ds.m) == (100, 92, 1)  # the RentTheRunway sample is preferred
    assert set(np.unique(ds.vectors.values)) <= {0.0, 1.0}
    mod = load_clothing_fit(os.path.join(CLOTHING, "modcloth_final_data_mini.json.gz"), rng=0)
    assert (mod.n, mod.d) == (100, 3)


def test_clothing_loader_caps_users_at_two_items(tmp_path):
    recs = [
        {"user_id": "u1", "item_id": "10", "fit": "fit"},
        {"user_id": "u1", "item_id": "11", "fit": "small"},
        {"user_id": "u1", "item_id": "12", "fit": "large"},
        {"user_id": "u1", "item_id": "10", "fit": "small"},  # repeated item: first record kept
        {"user_id": "u2", "item_id": "11", "fit": "fit"},
        {"user_id": "u3", "item_id": "12"},                    # no fit: skipped
    ]
    path = tmp_path / "renttherunway_final_data.json.gz"
    with gzip.open(path, "wt") as fh:
        for r in recs:
            fh.write(json.dumps(r) + "\n")
        fh.write("{not json\n")
    ds = load_clothing_fit(tmp_path, rng=4)
    assert (ds.n, ds.d, ds.m, ds.n_capped, ds.n_skipped) == (2, 3, 2, 1, 3)
    dense = ds.vectors.to_dense()
    assert dense[1].tolist() == [0.0, 1.0, 0.0] and ds.vectors.sizes.tolist() == [2, 1]
    assert load_clothing_fit(path, max_items=None).m == 3
    a = load_clothing_fit(path, rng=4).vectors.indices
    np.testing.assert_array_equal(a, ds.vectors.indices)
    with pytest.raises(ValueError, match="'max_items' parameter of load_clothing_fit"):
        load_clothing_fit(path, max_items=0)


def test_cap_items_keeps_a_uniform_subset():
    v = frequency_vectors(n=20_000, d=6, m=4, rng=5)
    capped, k = cap_items(v, 2, rng=6)
    assert k == 20_000 and (capped.sizes == 2).all()
    # each held item survives with probability 2/4
    kept = capped.frequencies() / v.frequencies()
    assert np.abs(kept - 0.5).max() < 5 * math.sqrt(0.25 / (20_000 * 4 / 6))
