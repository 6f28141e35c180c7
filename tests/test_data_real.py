"""Real-data loaders: every accepted format, section 7.1 preprocessing against a naive twin, errors."""

import gzip
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from fastldp.relations import (
    build_population,
    load_foursquare,
    load_gowalla,
    load_movielens,
    relation_population,
)
from fastldp.relations.relation_sets import _minhash_cap


def _find_shared_data():
    for parent in Path(__file__).resolve().parents:
        candidate = parent / "shared" / "data"
        if (candidate / "README.md").is_file():
            return candidate
    return None


SHARED = _find_shared_data()


@pytest.fixture(scope="module")
def shared_data():
    if SHARED is None:
        pytest.skip("the small real-data files (MovieLens latest-small, Foursquare, Gowalla "
                    "samples) are not next to this checkout")
    return SHARED


# ------------------------------------------------------------------ naive twin


def naive_population(events, d1, d2, k, seed=0):
    """Section 7.1 preprocessing written plainly: events are (holder, row, item) tuples."""
    relations = set(events)
    holders = sorted({h for h, _, _ in relations})
    freq = Counter(item for _, item in {(h, i) for h, _, i in relations})
    ranked = sorted(freq, key=lambda item: (-freq[item], item))
    column = {item: j for j, item in enumerate(ranked[: d2 - 1])}
    sets = {h: set() for h in holders}
    for h, r, i in relations:
        sets[h].add(r * d2 + column.get(i, d2 - 1))
    indptr, pairs = [0], []
    for h in holders:
        pairs.extend(sorted(sets[h]))
        indptr.append(len(pairs))
    indptr, pairs, n_capped = _minhash_cap(
        np.array(indptr, dtype=np.int64), np.array(pairs, dtype=np.int64), k, seed,
        np.array(holders, dtype=np.uint64))
    target = np.bincount(pairs, minlength=d1 * d2) / len(holders)
    columns = [c.decode("latin-1") if isinstance(c, bytes) else c for c in ranked[: d2 - 1]]
    return indptr, pairs, target.reshape(d1, d2), n_capped, columns


def assert_matches_twin(pop, events, d1, d2, k=8, seed=0):
    indptr, pairs, target, n_capped, columns = naive_population(events, d1, d2, k, seed)
    np.testing.assert_array_equal(pop.relations.indptr, indptr)
    np.testing.assert_array_equal(pop.relations.indices, pairs)
    np.testing.assert_array_equal(pop.target, target)
    assert pop.metadata["n_capped"] == n_capped
    assert pop.metadata["columns"] == columns


def assert_population_invariants(pop, d1, d2, s, k=8):
    assert pop.shape == (d1, d2) and pop.s == s and pop.k == k
    sizes = pop.set_sizes
    assert sizes.min() >= 1 and sizes.max() <= k
    np.testing.assert_array_equal(
        pop.target.ravel(), np.bincount(pop.relations.indices, minlength=d1 * d2) / pop.n)
    assert np.count_nonzero(pop.approximation) <= s
    tail = float(((pop.target - pop.approximation) ** 2).sum())
    assert pop.metadata["approximation_tail"] == pytest.approx(tail, rel=1e-12, abs=1e-18)
    kept = np.sort(pop.approximation.ravel())[::-1][:s]
    dropped = np.sort((pop.target - pop.approximation).ravel())[::-1]
    assert dropped[0] <= kept[min(s, np.count_nonzero(pop.target)) - 1]
    m = pop.metadata
    assert m["content_hash"] == pop.content_hash and m["used_n"] == pop.n
    assert m["domain"] == [d1, d2] and m["relations_stored"] == pop.relations.nnz
    assert m["relations_stored"] <= m["relations_in_domain"] <= m["relations_deduplicated"] <= m["raw_events"]


# ------------------------------------------------------------------ the shared real files

# content hashes of the processed shared files (d2 = 512, s = 128, k = 8, seeds 0); a change
# in the preprocessing or in the files fails here
SHARED_HASHES = {
    ("movielens", 512): "260a11852363a0881d919c30509ea36777cc2b254b72b1100e10cc120adb5e85",
    ("foursquare", 512): "3456022d0324965d4e462edcec11492a6b4092eca47a0a95c33eeaade18b22f4",
    ("gowalla", 512): "7359dbe30ef6c564e327fc3d0bb925b1b4f1e2db71f010b285fe565f425c682f",
}


def test_movielens_latest_small(shared_data):
    path = shared_data / "movielens-latest-small" / "ratings.csv.gz"
    pop = load_movielens(path)
    m = pop.metadata
    assert (m["raw_events"], m["holders"], m["used_n"]) == (100_836, 610, 610)
    assert m["relations_deduplicated"] == 100_836  # one rating per (user, movie)
    assert m["row_labels"] == ["1", "2", "3", "4", "5"]
    assert_population_invariants(pop, 5, 512, 128)
    assert pop.content_hash == SHARED_HASHES[("movielens", 512)]
    # the folder works too, and the compact domain
    compact = load_movielens(path.parent, d2=128)
    assert_population_invariants(compact, 5, 128, 32)
    assert compact.metadata["raw_events"] == 100_836


def test_movielens_latest_small_matches_the_naive_twin(shared_data):
    path = shared_data / "movielens-latest-small" / "ratings.csv.gz"
    events = []
    with gzip.open(path, "rt") as fh:
        next(fh)
        for line in fh:
            user, movie, rating, _ = line.split(",")
            events.append((int(user), int(np.ceil(float(rating))) - 1, int(movie)))
    assert_matches_twin(load_movielens(path, d2=64), events, 5, 64)


def test_foursquare_csv_head(shared_data):
    path = shared_data / "foursquare-tsmc2014" / "dataset_TSMC2014_TKY_kaggle_head.csv.gz"
    pop = load_foursquare(path)
    m = pop.metadata
    assert (m["raw_events"], m["holders"], m["used_n"]) == (8261, 1467, 1467)
    assert m["events_per_city"] == [0, 8261]  # a Tokyo file: only row 1 is used
    assert pop.target[0].sum() == 0 and pop.target[1].sum() > 0
    assert_population_invariants(pop, 2, 512, 128)
    assert pop.content_hash == SHARED_HASHES[("foursquare", 512)]
    events = []
    with gzip.open(path, "rt", encoding="latin-1") as fh:
        next(fh)
        for line in fh:
            fields = line.split(",")
            events.append((int(fields[0]), 1, fields[1].encode()))
    assert_matches_twin(load_foursquare(path, d2=128), events, 2, 128)


def test_gowalla_nyc_subset(shared_data):
    path = shared_data / "gowalla" / "loc-gowalla_totalCheckins_nyc_bbox.txt.gz"
    pop = load_gowalla(path)
    m = pop.metadata
    assert (m["raw_events"], m["holders"], m["used_n"]) == (138_957, 7115, 7115)  # < 32,000: all kept
    assert m["max_holders"] == 32_000
    assert_population_invariants(pop, 7, 512, 128)
    assert pop.content_hash == SHARED_HASHES[("gowalla", 512)]
    sub = load_gowalla(path, max_holders=1000, d2=128)
    assert sub.n == 1000 and sub.metadata["holders"] == 7115
    assert_population_invariants(sub, 7, 128, 32)
    again = load_gowalla(path, max_holders=1000, d2=128)
    assert again.content_hash == sub.content_hash
    other = load_gowalla(path, max_holders=1000, d2=128, holder_seed=1)
    assert other.content_hash != sub.content_hash


def test_build_population_reads_real_kinds(shared_data):
    path = shared_data / "gowalla"
    a = build_population("gowalla", seed=0, path=path, d2=128, max_holders=500)
    b = build_population("gowalla", seed=3, path=path, d2=128, max_holders=500)
    assert a.content_hash == b.content_hash  # real data ignores the experiment seed
    assert a.n == 500 and a.shape == (7, 128) and a.s == 32
    ml = build_population("movielens", path=shared_data / "movielens-latest-small")
    assert ml.shape == (5, 512) and ml.name == "movielens"
    fs = build_population("foursquare", path=shared_data / "foursquare-tsmc2014", d2=128)
    assert fs.shape == (2, 128) and fs.metadata["holders"] == 1467


# ------------------------------------------------------------------ tiny files in every format

ML_DAT = """1::10::5::978300760
1::11::3::978302109
1::12::3::978301968
2::10::4::978300275
2::13::5::978824291
2::10::2::978824292
3::11::1::978302268
3::14::4::978302039
"""


def _events_dat(text):
    out = []
    for line in text.strip().splitlines():
        u, m, r, _ = line.split("::")
        out.append((int(u), int(np.ceil(float(r))) - 1, int(m)))
    return out


@pytest.mark.parametrize("compress", [False, True])
def test_movielens_1m_dat(tmp_path, compress):
    name = "ratings.dat.gz" if compress else "ratings.dat"
    opener = gzip.open if compress else open
    with opener(tmp_path / name, "wt") as fh:
        fh.write(ML_DAT)
    pop = load_movielens(tmp_path, d2=3, s=4, k=2)
    assert pop.metadata["raw_events"] == 8 and pop.metadata["holders"] == 3
    # the dictionary: movies 10 and 11 (2 holders each) get columns 0 and 1; 12, 13, 14 are "other"
    assert pop.metadata["columns"] == [10, 11]
    assert_matches_twin(pop, _events_dat(ML_DAT), 5, 3, k=2)
    assert pop.target[4, 0] == pytest.approx(1 / 3)  # user 1 rated movie 10 with 5
    assert pop.set_sizes.max() <= 2


def test_movielens_csv_half_stars_round_up(tmp_path):
    (tmp_path / "ratings.csv").write_text(
        "userId,movieId,rating,timestamp\n1,1,0.5,1\n1,2,4.5,2\n2,1,1.0,3\n2,3,3.5,4\n")
    pop = load_movielens(tmp_path / "ratings.csv", d2=4, s=3, k=8)
    rows, cols = np.nonzero(pop.target)
    levels = {(int(r), int(c)) for r, c in zip(rows, cols)}
    # movie 1 -> column 0 (2 holders), then movies 2, 3 in id order
    assert levels == {(0, 0), (4, 1), (3, 2)}
    assert pop.target[0, 0] == 1.0


def test_movielens_rejects_out_of_range_ratings(tmp_path):
    (tmp_path / "ratings.csv").write_text("userId,movieId,rating,timestamp\n1,1,6.0,1\n")
    with pytest.raises(ValueError, match=r"ratings must lie in \(0, 5\]"):
        load_movielens(tmp_path)


FSQ_ROWS = [
    ("470", "49bbd6c0f964a520f4531fe3", "4bf58dd8d48988d127951735", "Arts & Crafts Store",
     "40.7198", "-74.0025", "-240", "Tue Apr 03 18:00:09 +0000 2012"),
    ("979", "4a43c0aef964a520c6a61fe3", "4bf58dd8d48988d1df941735", "Bridge",
     "40.6068", "-74.0442", "-240", "Tue Apr 03 18:00:25 +0000 2012"),
    ("470", "49bbd6c0f964a520f4531fe3", "4bf58dd8d48988d127951735", "Arts & Crafts Store",
     "40.7198", "-74.0025", "-240", "Wed Apr 04 18:00:09 +0000 2012"),
    ("69", "4c5cc7b485a1e21e00d35711", "4bf58dd8d48988d103941735", "Caf\xe9",
     "40.7161", "-73.8831", "-300", "Tue Apr 03 18:02:24 +0000 2012"),
]
TKY_ROWS = [
    ("470", "4b7b884ff964a5207d662fe3", "4bf58dd8d48988d1d1941735", "Ramen /  Noodle House",
     "35.7155", "139.8003", "540", "Tue Apr 03 18:22:04 +0000 2012"),
    ("1541", "4f0fd5a8e4b03856eeb6c8cb", "4bf58dd8d48988d10c951735", "Cosmetics Shop",
     "35.7051", "139.6195", "540", "Tue Apr 03 18:17:18 +0000 2012"),
]


def _write_tsv(path, rows):
    data = "".join("\t".join(r) + "\r\n" for r in rows).encode("latin-1")
    if path.name.endswith(".gz"):
        data = gzip.compress(data)
    path.write_bytes(data)


def test_foursquare_original_tsv_both_cities(tmp_path):
    _write_tsv(tmp_path / "dataset_TSMC2014_NYC.txt", FSQ_ROWS)
    _write_tsv(tmp_path / "dataset_TSMC2014_NYC.txt.gz", FSQ_ROWS)  # same file gzipped: read once
    _write_tsv(tmp_path / "dataset_TSMC2014_TKY.txt.gz", TKY_ROWS)
    pop = load_foursquare(tmp_path, d2=4, s=2)
    assert [Path(f).name for f in pop.metadata["source"]] == [
        "dataset_TSMC2014_NYC.txt", "dataset_TSMC2014_TKY.txt.gz"]
    m = pop.metadata
    assert m["raw_events"] == 6 and m["events_per_city"] == [4, 2]
    assert m["holders"] == 4  # user 470 is in both files and merged
    events = [(int(r[0]), 0, r[1].encode()) for r in FSQ_ROWS]
    events += [(int(r[0]), 1, r[1].encode()) for r in TKY_ROWS]
    assert_matches_twin(pop, events, 2, 4)
    split = load_foursquare(tmp_path, d2=4, s=2, holder_key="city-user")
    assert split.metadata["holders"] == 5
    assert split.n == 5


def test_foursquare_csv_with_header_city_from_timezone(tmp_path):
    header = "userId,venueId,venueCategoryId,venueCategory,latitude,longitude,timezoneOffset,utcTimestamp\n"
    body = "".join(",".join(r) + "\n" for r in FSQ_ROWS[:2] + TKY_ROWS[:1])
    body += '7,4b7b884ff964a5207d662fe3,x,"Food, Drink",35.7,139.8,540,Tue Apr 03 18:22:04 +0000 2012\n'
    (tmp_path / "checkins.csv").write_text(header + body, encoding="latin-1")
    pop = load_foursquare(tmp_path / "checkins.csv", d2=8)
    assert pop.metadata["events_per_city"] == [2, 2]
    assert pop.target[1].sum() == pytest.approx(2 / 3)  # users 470 and 7 of 470, 979, 7 in Tokyo
    # a file list works as well as a folder
    _write_tsv(tmp_path / "dataset_TSMC2014_NYC.txt", FSQ_ROWS)
    both = load_foursquare([tmp_path / "checkins.csv", tmp_path / "dataset_TSMC2014_NYC.txt"], d2=8)
    assert both.metadata["raw_events"] == 8


GOWALLA = """0\t2010-10-11T20:21:20Z\t40.74\t-73.98\t16907
0\t2010-10-11T23:59:59Z\t40.74\t-73.98\t16907
0\t2010-10-17T01:00:00Z\t40.74\t-73.98\t16907
1\t2010-10-12T00:21:28Z\t40.64\t-73.78\t23261
1\t2010-10-13T00:21:28Z\t40.64\t-73.78\t12973
2\t2009-02-04T05:17:38Z\t30.23\t-97.79\t22847
"""


@pytest.mark.parametrize("name", ["loc-gowalla_totalCheckins.txt", "loc-gowalla_totalCheckins.txt.gz"])
def test_gowalla_snap_format_and_weekdays(tmp_path, name):
    data = GOWALLA.encode()
    (tmp_path / name).write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    pop = load_gowalla(tmp_path, d2=8, s=4)
    assert pop.metadata["raw_events"] == 6 and pop.n == 3
    # 2010-10-11 Monday, 2010-10-17 Sunday, 2010-10-12 Tuesday, 2010-10-13 Wednesday, 2009-02-04 Wednesday
    events = [(0, 0, 16907), (0, 0, 16907), (0, 6, 16907), (1, 1, 23261), (1, 2, 12973), (2, 2, 22847)]
    assert_matches_twin(pop, events, 7, 8)
    assert pop.metadata["relations_deduplicated"] == 5
    assert pop.metadata["row_labels"][0] == "Mon"


def test_minhash_cap_is_the_public_rule_and_its_seed_matters():
    rng = np.random.default_rng(0)
    holders = rng.integers(0, 20, 2000)
    rows = rng.integers(0, 3, 2000)
    items = rng.integers(0, 50, 2000)
    events = list(zip(holders.tolist(), rows.tolist(), items.tolist()))
    for seed in (0, 123):
        pop = relation_population(holders, rows, items, d1=3, d2=16, k=5, name="t", minhash_seed=seed)
        assert_matches_twin(pop, events, 3, 16, k=5, seed=seed)
        assert pop.metadata["n_capped"] == 20 and np.all(pop.set_sizes == 5)
    a = relation_population(holders, rows, items, d1=3, d2=16, k=5, name="t", minhash_seed=0)
    b = relation_population(holders, rows, items, d1=3, d2=16, k=5, name="t", minhash_seed=123)
    assert a.content_hash != b.content_hash


def test_max_holders_is_a_public_uniform_subset():
    # each holder holds one item named after itself, so the dictionary lists the holders kept
    ids = np.arange(100, 200)
    pop = relation_population(ids, np.zeros(100, dtype=np.int64), ids, d1=1, d2=101, k=8, name="t",
                              max_holders=40, holder_seed=5)
    assert pop.n == 40 and pop.metadata["holders"] == 100 and pop.metadata["used_n"] == 40
    chosen = ids[np.sort(np.random.default_rng(5).permutation(100)[:40])]
    assert pop.metadata["columns"] == chosen.tolist()
    assert pop.metadata["raw_events"] == 100 and np.all(pop.set_sizes == 1)
    full = relation_population(ids, np.zeros(100, dtype=np.int64), ids, d1=1, d2=101, name="t",
                               max_holders=100)
    assert full.n == 100 and full.metadata["columns"] == ids.tolist()


# ------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    "loader, expected, where",
    [
        (load_movielens, "ratings.dat", "grouplens.org/datasets/movielens/1m"),
        (load_foursquare, "dataset_TSMC2014_NYC.txt", "sites.google.com/site/yangdingqi"),
        (load_gowalla, "loc-gowalla_totalCheckins.txt.gz", "snap.stanford.edu/data/loc-gowalla.html"),
    ],
)
def test_missing_files_name_the_file_and_where_it_is_published(tmp_path, loader, expected, where):
    for path in (tmp_path / "nowhere" / "x.txt", tmp_path):  # a missing file, an empty folder
        with pytest.raises(FileNotFoundError) as info:
            loader(path)
        text = str(info.value)
        assert expected in text and where in text and "never downloads" in text


def test_malformed_files_raise_a_clear_error(tmp_path):
    (tmp_path / "loc-gowalla_totalCheckins.txt").write_text("0\tnot-a-date\t1\t2\t3\n")
    with pytest.raises(ValueError, match="SNAP Gowalla"):
        load_gowalla(tmp_path)
    (tmp_path / "ratings.dat").write_text("1::x::5::1\n")
    with pytest.raises(ValueError, match="MovieLens 1M"):
        load_movielens(tmp_path / "ratings.dat")
    (tmp_path / "dataset_TSMC2014_NYC.csv").write_text("userId,venue,timezoneOffset\n1,a,2\n")
    with pytest.raises(ValueError, match="lacks one of"):
        load_foursquare(tmp_path / "dataset_TSMC2014_NYC.csv")


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"d2": 1}, ValueError, r"'d2' parameter of relation_population must be an int in \[2, inf\)"),
        ({"d2": 8, "s": 0}, ValueError, "'s' parameter"),
        ({"d2": 8, "s": 17}, ValueError, "'s' parameter"),
        ({"k": 0}, ValueError, "'k' parameter"),
        ({"max_holders": 0}, ValueError, "'max_holders' parameter"),
        ({"minhash_seed": -1}, ValueError, "'minhash_seed' parameter"),
        ({"holder_seed": 1.5}, TypeError, "'holder_seed' parameter"),
    ],
)
def test_bad_preprocessing_parameters(kwargs, exc, match):
    args = {"d1": 2, "d2": 8, "name": "t", **kwargs}
    with pytest.raises(exc, match=match):
        relation_population([1, 2], [0, 1], [5, 6], **args)


def test_bad_events_and_holder_key(tmp_path):
    with pytest.raises(ValueError, match="'rows' parameter"):
        relation_population([1, 2], [0, 2], [5, 6], d1=2, name="t")
    with pytest.raises(ValueError, match="one length"):
        relation_population([1, 2], [0], [5, 6], d1=2, name="t")
    with pytest.raises(ValueError, match="no events"):
        relation_population([], [], [], d1=2, name="t")
    with pytest.raises(ValueError, match="'holders' parameter"):
        relation_population([-1, 2], [0, 1], [5, 6], d1=2, name="t")
    _write_tsv(tmp_path / "dataset_TSMC2014_NYC.txt", FSQ_ROWS)
    with pytest.raises(ValueError, match="'holder_key' parameter of load_foursquare"):
        load_foursquare(tmp_path, holder_key="venue")


# Every GroupLens release a user might have: the same ratings in each format.
ML_EVENTS = [(1, 10, 5.0), (1, 11, 3.0), (2, 10, 4.0), (2, 12, 1.0), (3, 11, 2.0), (3, 10, 4.0)]
ML_FORMATS = {
    "100k": ("u.data", "".join(f"{u}\t{m}\t{int(r)}\t88125094{i}\n"
                               for i, (u, m, r) in enumerate(ML_EVENTS))),
    "1m-10m": ("ratings.dat", "".join(f"{u}::{m}::{r:g}::97830{i}\n"
                                      for i, (u, m, r) in enumerate(ML_EVENTS))),
    "20m-25m-32m-latest": ("ratings.csv", "userId,movieId,rating,timestamp\n" + "".join(
        f"{u},{m},{r:.1f},112548{i}\n" for i, (u, m, r) in enumerate(ML_EVENTS))),
}


@pytest.mark.parametrize("release", list(ML_FORMATS))
@pytest.mark.parametrize("compress", [False, True])
def test_movielens_reads_every_grouplens_release(tmp_path, release, compress):
    name, text = ML_FORMATS[release]
    folder = tmp_path / f"ml-{release}"
    folder.mkdir()
    if compress:
        with gzip.open(folder / (name + ".gz"), "wt") as fh:
            fh.write(text)
    else:
        (folder / name).write_text(text)
    pop = load_movielens(tmp_path, d2=3, s=4, k=2)  # found one level down, as unzipped
    reference = load_movielens(_write(tmp_path / "ref", ML_FORMATS["1m-10m"]), d2=3, s=4, k=2)
    assert pop.metadata["raw_events"] == len(ML_EVENTS)
    np.testing.assert_array_equal(pop.target, reference.target)


def _write(folder, entry):
    folder.mkdir()
    (folder / entry[0]).write_text(entry[1])
    return folder
