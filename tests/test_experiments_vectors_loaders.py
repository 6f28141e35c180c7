"""Paper 001, section 8.1 real data: the Amazon and MovieLens sparse-vector loaders, and the
real populations of the RPC experiments (tiny files here, the shared files when present)."""

import gzip
import os

import numpy as np
import pytest

from fastldp.vectors.datasets import (
    load_amazon_ratings,
    load_clothing_fit,
    load_commerce,
    load_movielens_ratings,
)
from fastldp.experiments.vectors import load_population, streams
from fastldp.experiments.vectors.methods import build_method
from fastldp.experiments.vectors.spec import DEFAULTS, canonical

SHARED = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data")
MOVIELENS = os.path.join(SHARED, "movielens-latest-small")
COMMERCE = os.path.join(SHARED, "womens-clothing-reviews")
CLOTHING = os.path.join(SHARED, "clothing-fit")

AMAZON = """\
A1,0205616461,5.0,1369699200
A2,0558925278,3.0,1355443200
A1,0558925278,4.0,1404691200
A1,B00000JYWI,1.0,1382572800
A3,0205616461,2.0,1274227200
A1,0205616461,1.0,1369699200
not,a,number,here
A4,X,7.0,1
A5,0558925278,4.5,1
"""


def test_amazon_loader_reads_the_headerless_csv(tmp_path):
    path = tmp_path / "ratings_Beauty.csv"
    path.write_text(AMAZON)
    ds = load_amazon_ratings(path, max_items=None)
    assert (ds.n, ds.d, ds.m) == (4, 3, 3)
    assert list(ds.user_ids) == ["A1", "A2", "A3", "A5"]  # first appearance
    assert list(ds.item_ids) == ["0205616461", "0558925278", "B00000JYWI"]
    expect = np.array([[1.0, 0.8, 0.2], [0, 0.6, 0], [0.4, 0, 0], [0, 0.9, 0]])
    np.testing.assert_allclose(ds.vectors.to_dense(), expect)
    assert ds.n_skipped == 3  # the malformed line, the rating 7, the repeated (A1, 0205616461)
    # gzip and a folder; a header line is skipped
    gz = tmp_path / "dir" / "ratings_x.csv.gz"
    gz.parent.mkdir()
    with gzip.open(gz, "wt") as fh:
        fh.write("userId,productId,rating,timestamp\n" + AMAZON)
    again = load_amazon_ratings(gz.parent, max_items=None)
    np.testing.assert_array_equal(again.vectors.to_dense(), ds.vectors.to_dense())
    assert again.n_skipped == ds.n_skipped


def test_amazon_cap_and_top_items(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text(AMAZON)
    capped = load_amazon_ratings(path, rng=0)  # the paper keeps two items
    assert capped.m == 2 and capped.n_capped == 1
    dense = capped.vectors.to_dense()
    full = load_amazon_ratings(path, max_items=None).vectors.to_dense()
    assert np.count_nonzero(dense[0]) == 2 and set(dense[0][dense[0] > 0]) <= set(full[0])
    np.testing.assert_array_equal(dense[1:], full[1:])
    top = load_amazon_ratings(path, max_items=None, top_items=1)
    # 0558925278 has three raters: A1, A2, A5
    assert list(top.item_ids) == ["0558925278"] and list(top.user_ids) == ["A1", "A2", "A5"]
    with pytest.raises(ValueError, match="'top_items' parameter of load_amazon_ratings"):
        load_amazon_ratings(path, top_items=0)
    with pytest.raises(FileNotFoundError, match="no such file"):
        load_amazon_ratings(tmp_path / "nope.csv")


def test_movielens_loader_csv_and_dat(tmp_path):
    csv_text = "userId,movieId,rating,timestamp\n1,10,4.0,1\n1,2,0.5,2\n7,10,5.0,3\n1,30,2.5,4\n"
    (tmp_path / "ratings.csv").write_text(csv_text)
    ds = load_movielens_ratings(tmp_path, max_items=None)
    assert list(ds.item_ids) == [2, 10, 30] and list(ds.user_ids) == [1, 7]
    np.testing.assert_allclose(ds.vectors.to_dense(), [[0.1, 0.8, 0.5], [0, 1.0, 0]])
    dat = tmp_path / "ml-1m"
    dat.mkdir()
    (dat / "ratings.dat").write_text("1::10::4::1\n1::2::1::2\n7::10::5::3\n")
    ds = load_movielens_ratings(dat / "ratings.dat", max_items=1, rng=3)
    assert ds.m == 1 and ds.n_capped == 1 and ds.d == 2
    with pytest.raises(FileNotFoundError, match="fastldp never downloads data"):
        load_movielens_ratings(tmp_path / "empty")


@pytest.mark.skipif(not os.path.isdir(MOVIELENS), reason="shared data not present")
def test_movielens_latest_small():
    ds = load_movielens_ratings(MOVIELENS, rng=0)
    assert (ds.n, ds.d, ds.m) == (610, 9724, 100)
    raw = load_movielens_ratings(MOVIELENS, max_items=None)
    assert raw.vectors.indices.shape[0] == 100_836
    assert ds.n_capped == int((raw.vectors.sizes > 100).sum())
    vals = ds.vectors.values
    assert vals.min() == 0.1 and vals.max() == 1.0  # ratings 0.5-5 divided by 5


@pytest.mark.skipif(not os.path.isdir(CLOTHING), reason="shared data not present")
def test_clothing_fit_samples():
    ds = load_clothing_fit(CLOTHING, rng=0)
    assert ds.name == "clothing" and ds.m <= 2 and set(np.unique(ds.vectors.values)) <= {0.0, 1.0}
    mod = load_clothing_fit(os.path.join(CLOTHING, "modcloth_final_data_mini.json.gz"), rng=0)
    assert mod.n > 0 and mod.m <= 2


def _real_config(table):
    return canonical({**DEFAULTS, "population": table})


@pytest.mark.skipif(not os.path.isdir(COMMERCE), reason="shared data not present")
def test_commerce_population_of_the_experiments():
    cfg = _real_config({"kind": "commerce", "path": "womens-clothing-reviews"})
    pop = load_population(cfg, 0, streams(cfg, 0), data_dir=SHARED)
    assert (pop.x.n, pop.x.d, pop.m) == (23_486, 1_206, 1)
    assert pop.values == "general" and pop.beta == 1.0
    assert np.array_equal(pop.x.mean(), load_commerce(COMMERCE).vectors.mean())
    mech, info = build_method("RPC", pop, eps=1.0, clip=True, codebook_seed=1)
    assert info["route"] == "rounded" and mech.clip_estimate == (-1.0, 1.0)  # section 6, 8.1
    mech, info = build_method("Collision", pop, eps=1.0, clip=True, codebook_seed=1)
    assert info["route"] == "signed"


def test_real_population_from_a_tiny_file(tmp_path):
    (tmp_path / "amazon").mkdir()
    (tmp_path / "amazon" / "ratings.csv").write_text(AMAZON)
    cfg = _real_config({"kind": "amazon", "path": "amazon", "max_items": 2})
    assert cfg["n"] is None and cfg["m"] is None
    pop = load_population(cfg, 0, streams(cfg, 0), data_dir=tmp_path)
    assert pop.m == 2 and pop.x.n == 4
    # beta of Assumption 1: max_i sqrt(||x_i||^2 / m); user A1 keeps two of 1.0, 0.8, 0.2
    sq = np.bincount(pop.x.rows, weights=pop.x.values ** 2)
    assert pop.beta == pytest.approx(np.sqrt(sq.max() / 2))


@pytest.mark.parametrize("name,text", [
    ("u.data", "1\t10\t5\t1\n2\t10\t4\t2\n2\t12\t1\t3\n"),
    ("ratings.dat", "1::10::5::1\n2::10::4::2\n2::12::1::3\n"),
    ("ratings.csv", "userId,movieId,rating,timestamp\n1,10,5.0,1\n2,10,4.0,2\n2,12,1.0,3\n"),
])
def test_movielens_ratings_read_every_grouplens_release(tmp_path, name, text):
    from fastldp.vectors import load_movielens_ratings

    (tmp_path / "ml-x").mkdir()
    (tmp_path / "ml-x" / name).write_text(text)
    ds = load_movielens_ratings(tmp_path)
    assert ds.vectors.n == 2 and ds.vectors.indptr[-1] == 3
