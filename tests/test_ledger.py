"""The per-identity ledger against a plain-Python twin; all-or-nothing, kill -9, two writers.

The twin below keeps, for each identity, the list of (release, epsilon) it
was charged, in plain Python; every answer of the ledger (spent, remaining,
can_release, groups, history) is compared with what the twin computes from
that list. Float sums are compared exactly: the ledger adds an identity's
epsilons in the order of the releases, as the twin does.
"""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("dp_accounting")

from fastldp.accounting.ledger import (ROUNDING, BudgetExceededError, Ledger,  # noqa: E402
                                       LedgerDamagedError)
from fastldp.cli import main  # noqa: E402


class Twin:
    """The ledger in plain Python: identity -> [(release, epsilon), ...]."""

    def __init__(self):
        self.log = {}
        self.names = []

    def charge(self, ids, eps, name):
        eps = np.broadcast_to(np.asarray(eps, dtype=float), (len(ids),))
        for i, e in zip(ids, eps):
            self.log.setdefault(int(i), []).append((name, float(e)))
        self.names.append(name)

    def spent(self, i):
        total = 0.0
        for _, e in self.log.get(int(i), []):
            total = total + e
        return total

    def groups(self):
        out = {}
        for i, entries in self.log.items():
            out.setdefault(tuple(n for n, _ in entries), []).append(self.spent(i))
        return out


def _random_ledger(ledger, twin, rng, n_releases=12, space=150):
    for r in range(n_releases):
        size = 140 if r == 0 else int(rng.integers(1, space))
        ids = rng.choice(space, size, replace=False) * 1_000_003 - 10**12  # negative too
        # an epsilon per identity (more than 64 distinct: rows bound one by one), one for
        # all, or three tiers (up to 64 distinct: rows inserted from JSON, per epsilon)
        eps = (rng.uniform(0.05, 1, size), float(rng.uniform(0.05, 1)),
               rng.choice([0.1, 0.25, 0.7], size))[r % 3]
        ledger.charge(ids, eps, release=f"r{r}")
        twin.charge(ids, eps, f"r{r}")
    return np.arange(-5, space + 5) * 1_000_003 - 10**12  # with never-charged identities


def test_spent_remaining_groups_and_history_match_a_plain_python_twin():
    rng = np.random.default_rng(2026)
    ledger, twin = Ledger(":memory:"), Twin()
    everyone = _random_ledger(ledger, twin, rng)
    expected = np.array([twin.spent(i) for i in everyone])
    # exact: the same additions in the same order; a ledger that summed in another order
    # (or lost a release) would differ in the last bits or more
    np.testing.assert_array_equal(ledger.spent(everyone), expected)
    np.testing.assert_array_equal(ledger.spent(everyone[::-1]), expected[::-1])
    np.testing.assert_array_equal(ledger.remaining(everyone, 3.0), 3.0 - expected)
    assert ledger.spent([]).shape == (0,)

    groups = ledger.groups(cap=3.0)
    naive = twin.groups()
    assert {g.releases: g.n_identities for g in groups} == {k: len(v) for k, v in naive.items()}
    for g in groups:
        assert (g.spent_min, g.spent_max) == (min(naive[g.releases]), max(naive[g.releases]))
        assert g.remaining == 3.0 - max(naive[g.releases])
    # ordered by their last release, then their earlier ones
    keys = [(twin.names.index(g.releases[-1]), [twin.names.index(n) for n in g.releases])
            for g in groups]
    assert keys == sorted(keys)
    assert sum(g.n_identities for g in groups) == len(twin.log) == ledger.n_identities

    for i in everyone[::7]:
        assert ledger.history(int(i)) == twin.log.get(int(i), [])
    assert [r.name for r in ledger.releases()] == twin.names
    assert [r.index for r in ledger.releases()] == list(range(1, len(twin.names) + 1))


_charges = st.lists(st.tuples(
    st.lists(st.integers(-3, 8), min_size=1, max_size=8, unique=True),   # identities
    st.one_of(st.sampled_from([0.25, 0.5, 1.0]),                         # one epsilon
              st.lists(st.sampled_from([0.125, 0.25, 0.75]), min_size=8, max_size=8)),
    st.one_of(st.none(), st.sampled_from([1.0, 1.5, 2.0])),              # a cap, or none
    st.booleans()),                                                      # retried
    min_size=1, max_size=8)


@settings(max_examples=100)
@given(_charges)
def test_any_sequence_of_charges_matches_the_twin(charges):
    ledger, twin = Ledger(":memory:"), Twin()
    for k, (ids, eps, cap, retried) in enumerate(charges):
        eps = eps if isinstance(eps, float) else eps[:len(ids)]
        per = np.broadcast_to(eps, (len(ids),))
        fits = [twin.spent(i) + e <= cap * (1 + ROUNDING) for i, e in zip(ids, per)] if cap \
            else [True] * len(ids)
        if cap is not None:
            assert ledger.can_release(ids, eps, cap).tolist() == fits
        if all(fits):
            ledger.charge(ids, eps, release=f"r{k}", cap=cap)
            twin.charge(ids, eps, f"r{k}")
            if retried:  # the same release again: nothing more is charged
                ledger.charge(ids[::-1], per[::-1].copy(), release=f"r{k}", cap=cap)
        else:
            with pytest.raises(BudgetExceededError):
                ledger.charge(ids, eps, release=f"r{k}", cap=cap)
    everyone = np.arange(-3, 9)
    np.testing.assert_array_equal(ledger.spent(everyone), [twin.spent(i) for i in everyone])
    groups = {g.releases: (g.n_identities, g.spent_min, g.spent_max) for g in ledger.groups()}
    assert groups == {k: (len(v), min(v), max(v)) for k, v in twin.groups().items()}
    assert [r.name for r in ledger.releases()] == twin.names


def test_the_extreme_int64_identities_are_kept_exactly():
    ledger = Ledger(":memory:")
    extremes = [-2**63, -2**63 + 1, -1, 0, 2**53 + 1, 2**63 - 1]
    tiers = np.linspace(0.1, 0.6, 6)
    own = np.linspace(0.01, 0.02, 76)
    ledger.charge(extremes, 0.5, release="one")                # JSON, one epsilon
    ledger.charge(extremes, tiers, release="tiers")            # JSON, per epsilon
    ledger.charge(extremes + list(range(1000, 1070)), own, release="own")  # row by row
    ledger.charge(np.array(extremes[3:], dtype=np.uint64), 0.25, release="unsigned")
    expected = 0.5 + tiers + own[:6] + np.array([0, 0, 0, 0.25, 0.25, 0.25])
    np.testing.assert_array_equal(ledger.spent(extremes), expected)
    assert ledger.spent([2**53])[0] == 0.0  # a neighbour that a float64 would merge
    assert ledger.history(2**63 - 1) == [("one", 0.5), ("tiers", tiers[5]), ("own", own[5]),
                                         ("unsigned", 0.25)]
    with pytest.raises(ValueError, match="'identities'"):
        ledger.spent([2**63])


def test_can_release_is_exact_at_the_cap_with_a_rounding_slack():
    ledger = Ledger(":memory:")
    ledger.charge([1, 2], 0.1, release="a")
    # 0.1 + 0.2 is 0.30000000000000004 in floats: above a cap of 0.3 by rounding only, so
    # it fits (a ledger without the slack refuses it); above by 10^-9 it does not
    assert 0.1 + 0.2 > 0.3
    assert ledger.can_release([1], 0.2, cap=0.3).tolist() == [True]
    assert ledger.can_release([1], 0.2 + 0.3 * ROUNDING, cap=0.3).tolist() == [True]
    assert ledger.can_release([1], 0.2 + 1e-9, cap=0.3).tolist() == [False]
    ledger.charge([1], 0.2, release="b", cap=0.3)
    with pytest.raises(BudgetExceededError):
        ledger.charge([2], 0.2 + 1e-9, release="c", cap=0.3)
    # the spend is the float sum, in the order charged
    assert ledger.spent([1, 2]).tolist() == [0.1 + 0.2, 0.1]
    # per-identity answers, in the caller's order (3 was never charged)
    answer = ledger.can_release([3, 1, 2], [1.0, 0.71, 0.5], cap=1.0)
    assert answer.dtype == bool and answer.tolist() == [True, False, True]


def test_a_charge_over_the_cap_charges_nobody():
    ledger = Ledger(":memory:")
    ledger.charge([1, 2, 3], 0.5, release="a")
    ledger.charge([3], 0.4, release="b")
    with pytest.raises(BudgetExceededError, match=r"'c' was not charged: 1 of 3 identities "
                                                  r"would exceed it \(3\)") as info:
        ledger.charge([4, 3, 1], 0.2, release="c", cap=1.0)
    assert info.value.identities.tolist() == [3]
    # nothing of 'c' was recorded: not identity 4, not the identities within the cap
    assert [r.name for r in ledger.releases()] == ["a", "b"]
    np.testing.assert_array_equal(ledger.spent([1, 2, 3, 4]), [0.5, 0.5, 0.9, 0.0])
    assert ledger.n_identities == 3
    # within the cap it is charged
    ledger.charge([4, 3, 1], 0.1, release="c", cap=1.0)
    np.testing.assert_array_equal(ledger.spent([1, 3, 4]), [0.6, 0.9 + 0.1, 0.1])


def test_a_release_name_is_charged_once_and_a_retry_is_idempotent():
    ledger = Ledger(":memory:")
    first = ledger.charge([5, 1, 9], [0.1, 0.2, 0.3], release="monday")
    # the same content in another order: the same release, charged once
    again = ledger.charge([9, 5, 1], [0.3, 0.1, 0.2], release="monday")
    assert again == first
    np.testing.assert_array_equal(ledger.spent([1, 5, 9]), [0.2, 0.1, 0.3])
    assert len(ledger.releases()) == 1
    # other content under the same name is refused, and charges nothing
    for ids, eps in (([5, 1, 9], [0.1, 0.2, 0.31]), ([5, 1], [0.1, 0.2]), ([5, 1, 9], 0.2)):
        with pytest.raises(ValueError, match="'monday' was already charged .release #1. with "
                                             "other identities"):
            ledger.charge(ids, eps, release="monday")
    np.testing.assert_array_equal(ledger.spent([1, 5, 9]), [0.2, 0.1, 0.3])
    # unnamed releases are all distinct
    a = ledger.charge([1], 0.1)
    b = ledger.charge([1], 0.1)
    assert a.name != b.name and len(ledger.releases()) == 3


def test_a_failing_charge_leaves_nothing(tmp_path):
    path = tmp_path / "l.db"
    ledger = Ledger(path)
    ledger.charge([1, 2], 0.5, release="kept")
    # a trigger that fails the 600,000th row of a charge: the release must vanish whole
    raw = sqlite3.connect(path)
    raw.execute("CREATE TRIGGER boom BEFORE INSERT ON charges WHEN NEW.identity = 600000 "
                "BEGIN SELECT RAISE(ABORT, 'boom'); END")
    raw.commit()
    raw.close()
    with pytest.raises(sqlite3.IntegrityError, match="boom"):
        ledger.charge(np.arange(1, 1_000_001), 0.25, release="lost")
    ledger.close()
    with Ledger(path) as again:
        assert [r.name for r in again.releases()] == ["kept"]
        assert again.n_identities == 2
        np.testing.assert_array_equal(again.spent([1, 2, 3, 599_999]), [0.5, 0.5, 0.0, 0.0])
        assert [g.releases for g in again.groups()] == [("kept",)]
        assert again.integrity_check() == "ok"
        (rows,) = again._con.execute("SELECT COUNT(*) FROM charges").fetchone()
        assert rows == 2


@pytest.mark.parametrize("ids, eps, error, said", [
    ([1, 2, 1, 3, 3], 0.5, ValueError, "distinct identities.*Got 2 repeated: 1, 3 instead"),
    ([1.0, 2.0], 0.5, TypeError, "'identities' parameter of Ledger.charge.*dtype float64"),
    ([True, False], 0.5, TypeError, "dtype bool"),
    (["a"], 0.5, TypeError, "'identities'"),
    ([], 0.5, ValueError, "non-empty"),
    ([[1, 2]], 0.5, ValueError, r"shape \(1, 2\)"),
    (np.array([2**63], dtype=np.uint64), 0.5, ValueError, "9223372036854775808"),
    ([2**64], 0.5, ValueError, "'identities'"),
    ([1, 2], float("nan"), ValueError, "'epsilons'.*Got nan at index 0"),
    ([1, 2], [0.5, 0.0], ValueError, "'epsilons'.*Got 0.0 at index 1"),
    ([1, 2], [0.5, float("inf")], ValueError, "'epsilons'.*Got inf at index 1"),
    ([1, 2], -1, ValueError, "'epsilons'.*Got -1.0"),
    ([1, 2], [0.5], ValueError, "length 2"),
    ([1, 2], 1e308, ValueError, r"'epsilons' parameter of Ledger.charge must contain only "
                                r"floats in \(0, 700.0\] \(MAX_EPSILON.*Got 1e\+308 at index 0"),
    ([1, 2], [0.5, 700.0000000000001], ValueError, "Got 700.0000000000001 at index 1"),
])
def test_bad_charges_are_refused_clearly(ids, eps, error, said):
    ledger = Ledger(":memory:")
    with pytest.raises(error, match=said):
        ledger.charge(ids, eps, release="x")
    assert ledger.releases() == []


def test_epsilons_are_at_most_max_epsilon_and_no_total_overflows():
    from fastldp.accounting.ledger import MAX_EPSILON
    from fastldp.oracles._base import EPSILON_MAX

    assert MAX_EPSILON == EPSILON_MAX == 700.0  # the largest budget of any mechanism
    ledger = Ledger(":memory:")
    for name in ("a", "b"):  # the review's case: two charges of 1e308 gave spent = inf
        with pytest.raises(ValueError, match="'epsilons'.*Got 1e\\+308"):
            ledger.charge([1, 2], 1e308, release=name)
    assert ledger.releases() == [] and ledger.spent([1])[0] == 0.0
    for k in range(3):  # the maximum itself is a charge; totals stay exact and finite
        ledger.charge([1, 2], MAX_EPSILON, release=f"max-{k}")
    np.testing.assert_array_equal(ledger.spent([1, 2]), [2100.0, 2100.0])
    assert [g.spent_max for g in ledger.groups()] == [2100.0]
    with pytest.raises(ValueError, match="'epsilons'"):
        ledger.can_release([1], 1e308, cap=1e308)


@pytest.mark.parametrize("cap, error, said", [
    (float("nan"), ValueError, "'cap' parameter of Ledger.remaining"),
    (0.0, ValueError, "'cap'"),
    (-1, ValueError, "'cap'"),
    ("1", TypeError, "'cap'"),
    ((1.0, 0.0), ValueError, r"delta in \(0, 1\)"),
    ((1.0, 1.0), ValueError, r"delta in \(0, 1\)"),
    ((1.0, float("nan")), ValueError, "'cap'"),
    ((1.0, 1e-6, 2), ValueError, "'cap'"),
])
def test_bad_caps_and_names_are_refused_clearly(cap, error, said):
    ledger = Ledger(":memory:")
    with pytest.raises(error, match=said):
        ledger.remaining([1], cap)
    with pytest.raises(TypeError, match="'release' parameter of Ledger.charge"):
        ledger.charge([1], 0.5, release=5)
    with pytest.raises(ValueError, match="'release' parameter of Ledger.charge"):
        ledger.charge([1], 0.5, release=" ")


def test_files_reopen_and_foreign_files_are_refused(tmp_path):
    path = tmp_path / "l.db"
    with Ledger(path) as ledger:
        ledger.charge([7, 8], [0.25, 0.5], release="one")
    with Ledger(path, create=False) as ledger:
        np.testing.assert_array_equal(ledger.spent([7, 8]), [0.25, 0.5])
    with Ledger(path, readonly=True) as ledger:
        assert repr(ledger) == f"Ledger({str(path)!r}, 1 release)"
        with pytest.raises(ValueError, match="read-only"):
            ledger.charge([9], 0.5)
    with pytest.raises(FileNotFoundError):
        Ledger(tmp_path / "absent.db", create=False)
    assert not (tmp_path / "absent.db").exists()
    with pytest.raises(IsADirectoryError):
        Ledger(tmp_path, readonly=True)
    text = tmp_path / "notes.txt"
    text.write_text("not a database at all, " * 100)
    with pytest.raises(ValueError, match="not a fastldp ledger"):
        Ledger(text)
    other = tmp_path / "other.db"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE t(x)")
    con.commit()
    con.close()
    with pytest.raises(ValueError, match="not a fastldp ledger: it lacks the tables meta"):
        Ledger(other)


# --- read-only copies: a WAL without its -shm in a folder no one may write -----------------

def _wal_copies(tmp_path):
    """Three copies of one ledger as a backup taken while a writer ran would hold them.

    ``pending``: the file and a WAL whose last release is not yet checkpointed into it;
    ``checkpointed``: the file and a WAL whose frames are all in the file already;
    ``bare``: the file alone (WAL mode, no -wal, no -shm); ``empty``: the file and an
    empty WAL (a truncating checkpoint's). Returns {name: (files, names, spent of
    identities 1, 2, 7)}.
    """
    src = tmp_path / "live"
    src.mkdir()
    path = src / "l.db"
    out = {}
    ledger = Ledger(path)
    ledger.charge([1, 2, 3], 0.5, release="a")
    ledger._con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    out["bare"] = ({"l.db": path.read_bytes()}, ["a"], [0.5, 0.5, 0.0])
    out["empty"] = ({"l.db": path.read_bytes(), "l.db-wal": b""}, ["a"], [0.5, 0.5, 0.0])
    assert (src / "l.db-wal").read_bytes() == b""
    ledger.charge([1, 2], 0.25, release="b")  # in the WAL only: the file lacks it
    out["pending"] = ({"l.db": path.read_bytes(), "l.db-wal": (src / "l.db-wal").read_bytes()},
                      ["a", "b"], [0.75, 0.75, 0.0])
    ledger.charge([7], 0.5, release="c")
    ledger._con.execute("PRAGMA wal_checkpoint(PASSIVE)")  # in the file; the WAL stays
    out["checkpointed"] = ({"l.db": path.read_bytes(),
                            "l.db-wal": (src / "l.db-wal").read_bytes()},
                           ["a", "b", "c"], [0.75, 0.75, 0.5])
    ledger.close()
    assert len(out["pending"][0]["l.db-wal"]) > 0 and len(out["checkpointed"][0]["l.db-wal"]) > 0
    return out


class _CannotOpen:
    """What SQLite gives a mode=ro reader of a WAL file whose -shm it cannot create."""

    def execute(self, *args):
        raise sqlite3.OperationalError("unable to open database file")

    def close(self):
        pass


@pytest.mark.parametrize("how", ["real", "simulated"])
def test_a_read_only_copy_with_a_wal_and_no_shm_opens_read_only(tmp_path, monkeypatch, how):
    """A backup folder no one may write, holding a ledger and its -wal but no -shm.

    "real": a folder that refuses writes: chmod 0555 as a user other than root; as root
    (chmod does not stop root) a tmpfs mounted read-only, and a skip where root may not
    mount one. "simulated" runs everywhere: the folder stays writable, and the in-place
    mode=ro reader is made to fail at its first read exactly as SQLite fails in a
    read-only folder ("unable to open database file"); what follows is the real fallback.
    Both check what was read, the mode used, and that no byte of the folder changed.
    The old code called each of them "not a fastldp ledger".
    """
    copies = _wal_copies(tmp_path)
    root = tmp_path / "backup"
    root.mkdir()
    mounted = False
    if how == "real" and os.geteuid() == 0:
        made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(root)],
                              capture_output=True)
        if made.returncode != 0:
            pytest.skip("root, and no tmpfs may be mounted: the simulated case stands in")
        mounted = True
    try:
        for name, (files, _, _) in copies.items():
            (root / name).mkdir()
            for file, data in files.items():
                (root / name / file).write_bytes(data)
        if how == "real":
            if mounted:
                subprocess.run(["mount", "-o", "remount,ro", str(root)], check=True)
                with pytest.raises(OSError):
                    (root / "probe").write_text("")
            else:
                for name in copies:
                    for file in (root / name).iterdir():
                        file.chmod(0o444)
                    (root / name).chmod(0o555)
                with pytest.raises(PermissionError):
                    (root / "bare" / "probe").write_text("")
        else:
            real_connect = sqlite3.connect
            in_place = root.resolve().as_uri()

            def connect(target, *args, **kwargs):
                if (kwargs.get("uri") and str(target).startswith(in_place)
                        and "immutable=1" not in str(target)):
                    return _CannotOpen()
                return real_connect(target, *args, **kwargs)

            monkeypatch.setattr("fastldp.accounting.ledger.sqlite3.connect", connect)
        modes = {}
        for name, (files, names, spent) in copies.items():
            with Ledger(root / name / "l.db", readonly=True) as ledger:
                assert [r.name for r in ledger.releases()] == names, name
                np.testing.assert_array_equal(ledger.spent([1, 2, 7]), spent)
                ledger.verify()
                modes[name] = ledger.open_mode
            # nothing written: the same files, the same bytes, no -shm
            assert {f.name: f.read_bytes() for f in (root / name).iterdir()} == files, name
        # a WAL whose frames may be missing from the file is read through a private copy
        # (without the -shm no one knows which frames were checkpointed); no WAL, or one
        # that adds nothing, lets the file be read alone, immutable
        assert modes == {"bare": "read-only, immutable", "empty": "read-only, immutable",
                         "pending": "read-only, private copy",
                         "checkpointed": "read-only, private copy"}
        assert main(["account", str(root / "pending" / "l.db"), "--json"]) == 0
    finally:
        if mounted:
            subprocess.run(["umount", str(root)], check=False)
        elif how == "real":
            for folder in [root, *root.iterdir()]:
                folder.chmod(0o755)


def test_which_wal_adds_nothing_to_its_file(tmp_path):
    from fastldp.accounting.ledger import _wal_adds_nothing

    wal = _wal_copies(tmp_path)["pending"][0]["l.db-wal"]
    cases = {
        "frames of this generation": (wal, False),
        "empty": (b"", True),
        "a torn header": (wal[:20], True),
        "a bad magic number": (b"\0\0\0\0" + wal[4:], True),
        "a header and no whole frame": (wal[:32 + 24 + 100], True),
        # a header rewritten with new salts (a restarted WAL) over frames of the last one
        "frames of an earlier generation": (wal[:16] + bytes(b ^ 0xFF for b in wal[16:24])
                                            + wal[24:], True),
    }
    for name, (data, adds_nothing) in cases.items():
        (tmp_path / "w").write_bytes(data)
        assert _wal_adds_nothing(tmp_path / "w") is adds_nothing, name


def test_files_opened_read_only_in_place_are_read_only(tmp_path):
    path = tmp_path / "l.db"
    _small_ledger(path)
    with Ledger(path) as writer:  # a live writer: the WAL and its -shm exist
        writer.charge([9], 0.5, release="live")
        with Ledger(path, readonly=True) as reader:
            assert reader.open_mode == "read-only"
            assert [r.name for r in reader.releases()][-1] == "live"
            with pytest.raises(sqlite3.OperationalError, match="readonly"):
                reader._con.execute("DELETE FROM releases")


# --- approximate DP: events composed through fastldp.accounting, per group ---------------

def test_an_epsilon_delta_cap_composes_each_groups_events():
    from fastldp.accounting import epsilon_at, pure_dp_event, zcdp_event

    ledger = Ledger(":memory:")
    shuffle = zcdp_event(0.05)
    ledger.charge([1, 2, 3], 0.5, release="pure")               # no event: pure 0.5
    ledger.charge([2, 3], None, shuffle, release="shuffled")     # spends its epsilon at 1e-6
    ledger.charge([3, 4], [0.25, 0.75], release="pure-2")
    delta = 1e-6
    s = epsilon_at([shuffle], ledger.delta)
    # by hand: each identity's events, then its pure releases: one by one while each
    # charged one epsilon to all, else their sum as one pure event (basic composition)
    by_hand = {
        1: epsilon_at([pure_dp_event(0.5)], delta),
        2: epsilon_at([shuffle, pure_dp_event(0.5)], delta),
        3: epsilon_at([shuffle, pure_dp_event(0.5 + 0.25)], delta),  # pure-2 is personal
        4: 0.75,  # personal epsilons only: their sum
        5: 0.0,
    }
    ids = np.array([1, 2, 3, 4, 5])
    expected = np.array([by_hand[i] for i in ids])
    np.testing.assert_array_equal(ledger.remaining(ids, (2.0, delta)), 2.0 - expected)
    assert by_hand[2] < 0.5 + s  # composed: tighter than the sum of the spends
    # basic composition counts the spends (the event's: its epsilon at the ledger's delta)
    np.testing.assert_array_equal(ledger.spent(ids), [0.5, 0.5 + s, 0.5 + s + 0.25, 0.75, 0.0])
    # a new release with an event: composed with each identity's past
    new = zcdp_event(0.2)
    pure_part = {1: 0.5, 2: 0.5, 3: 0.75, 4: 0.75}
    after = {i: epsilon_at(([shuffle] if i in (2, 3) else []) + [new] + (
        [pure_dp_event(pure_part[i])] if i in pure_part else []), delta) for i in ids.tolist()}
    cap = (float(np.median(list(after.values()))), delta)
    np.testing.assert_array_equal(ledger.can_release(ids, None, cap, event=new),
                                  [after[i] <= cap[0] * (1 + ROUNDING) for i in ids.tolist()])
    # groups: one composition per release set, at the group's largest pure part
    groups = {g.releases: g for g in ledger.groups(cap=(2.0, delta))}
    assert groups[("pure", "shuffled", "pure-2")].remaining == 2.0 - by_hand[3]
    assert groups[("pure", "shuffled")].remaining == 2.0 - by_hand[2]
    assert groups[("pure-2",)].remaining == 2.0 - 0.75
    assert groups[("pure",)].remaining == 2.0 - by_hand[1]
    # the event is stored as JSON and read back
    (_, shuffled, _) = ledger.releases()
    assert shuffled.event == shuffle and ledger.releases()[0].event is None
    # events the accountant cannot compose are refused when charged, not when queried
    import dp_accounting

    with pytest.raises(TypeError, match="'event' parameter of Ledger.charge must be a "
                                        "dp_accounting DpEvent or None. Got 'rdp' instead"):
        ledger.charge([9], 1.0, "rdp", release="bad")
    with pytest.raises(ValueError, match="PoissonSampledDpEvent.*is not supported"):
        ledger.charge([9], 1.0, dp_accounting.PoissonSampledDpEvent(0.1, new), release="bad")
    with pytest.raises(TypeError, match="'event' parameter of Ledger.can_release"):
        ledger.can_release([9], 1.0, cap, event=0.5)
    # an over-cap release with an event is refused whole
    with pytest.raises(BudgetExceededError):
        ledger.charge(ids, None, new, release="late", cap=cap)
    assert len(ledger.releases()) == 3


def test_a_charge_with_an_event_spends_the_events_epsilon_at_the_ledgers_delta(tmp_path):
    import dp_accounting

    from fastldp.accounting import (DEFAULT_DELTA, compose, epsilon_at, pure_dp_event,
                                    pure_epsilon, zcdp_event)
    from fastldp.accounting.ledger import MAX_EPSILON

    ledger = Ledger(":memory:")
    assert ledger.delta == DEFAULT_DELTA == 1e-6
    big = zcdp_event(5.0)
    cost = epsilon_at([big], 1e-6)
    assert round(cost, 2) == 20.55  # the review's numbers
    # the review's case: charged 0.01 under a cap of 1 with an event that costs 20.55;
    # the old code accepted it and counted 0.01
    with pytest.raises(ValueError, match=r"'epsilons' parameter of Ledger.charge must agree "
                                         r"with the release's event, which spends 20.55.*"
                                         r"epsilon at the ledger's delta 1e-06.*Got 0.01 for "
                                         r"identity 1 \(2 of 2 differ\)"):
        ledger.charge([1, 2], 0.01, big, cap=1.0, release="r")
    with pytest.raises(ValueError, match="'epsilons' parameter of Ledger.can_release"):
        ledger.can_release([1, 2], 0.01, 1.0, event=big)
    # without epsilons the spend is the event's: over the cap, refused whole
    with pytest.raises(BudgetExceededError):
        ledger.charge([1, 2], event=big, cap=1.0, release="r")
    assert ledger.can_release([1, 2], None, 21.0, event=big).tolist() == [True, True]
    assert ledger.releases() == []
    record = ledger.charge([1, 2], event=big, cap=21.0, release="r")
    assert record.epsilon_min == record.epsilon_max == cost
    np.testing.assert_array_equal(ledger.spent([1, 2]), [cost, cost])
    # a retry with the same event (and the agreeing or omitted epsilons) charges nothing
    assert ledger.charge([1, 2], cost * (1 + 1e-10), big, release="r") == record
    assert ledger.spent([1])[0] == cost
    # a pure event spends its pure epsilon (delta 0), a composition of them their sum
    ledger.charge([3], 0.5, pure_dp_event(0.5), release="p")
    ten = compose([pure_dp_event(0.1)] * 10)
    ledger.charge([3], None, ten, release="p10")
    assert ledger.spent([3])[0] == 0.5 + pure_epsilon(ten)
    assert 1.0 <= pure_epsilon(ten) <= 1.0 + 1e-15  # their sum, rounded up
    with pytest.raises(ValueError, match="which spends 0.5 \\(its pure epsilon"):
        ledger.charge([4], 0.7, pure_dp_event(0.5))  # more than the event: refused too
    # events that spend nothing finite, or more than MAX_EPSILON, or nothing at all
    for event, said in [(dp_accounting.NonPrivateDpEvent(), "spends inf"),
                        (zcdp_event(1e5), "spends 110134.8"),
                        (pure_dp_event(MAX_EPSILON * 2), "spends 1400.0"),
                        (dp_accounting.NoOpDpEvent(), "spends 0.0")]:
        with pytest.raises(ValueError, match=r"'event' parameter of Ledger.charge must spend "
                                             rf"an epsilon in \(0, 700.0\].*{said}"):
            ledger.charge([5], event=event)
    with pytest.raises(ValueError, match="'epsilons' parameter of Ledger.charge.*required "
                                         "for a release without an event"):
        ledger.charge([5])
    assert len(ledger.releases()) == 3
    # a ledger's delta is fixed when it is made, and checked when it is opened
    path = tmp_path / "d.db"
    with Ledger(path, delta=1e-5) as made:
        made.charge([1], event=big, release="r")
        assert made.spent([1])[0] == epsilon_at([big], 1e-5) < cost
    with Ledger(path) as again:
        assert again.delta == 1e-5
    with Ledger(path, delta=1e-5, readonly=True) as again:
        assert again.delta == 1e-5
    with pytest.raises(ValueError, match=r"'delta' parameter of Ledger must be the ledger's "
                                         r"own delta, 1e-05.*Got 1e-06 instead"):
        Ledger(path, delta=1e-6)
    with pytest.raises(ValueError, match=r"'delta' parameter of Ledger must be a float in "
                                         r"\[0, 1\)"):
        Ledger(":memory:", delta=1.0)
    pure_only = Ledger(":memory:", delta=0.0)  # only pure events can be charged
    pure_only.charge([1], event=pure_dp_event(1.0))
    with pytest.raises(ValueError, match="spends inf"):
        pure_only.charge([1], event=zcdp_event(0.01))


def test_many_small_pure_releases_compose_below_their_sum_under_a_delta():
    from fastldp.accounting import epsilon_at, pure_dp_event

    ledger = Ledger(":memory:")
    for k in range(40):
        ledger.charge([1, 2], 0.1, release=f"small-{k}")
    delta = 1e-6
    tight = epsilon_at([pure_dp_event(0.1)] * 40, delta)
    assert tight < 3.0  # the accountant's PLD: far below the sum, 4
    np.testing.assert_array_equal(ledger.remaining([1, 2], (4.0, delta)), 4.0 - tight)
    assert ledger.remaining([1], 4.0)[0] == 4.0 - sum([0.1] * 40)  # a float cap: the sum
    plan = epsilon_at([pure_dp_event(0.1)] * 40 + [pure_dp_event(1.0)], delta)
    assert ledger.can_release([1], 1.0, (plan, delta)).tolist() == [True]
    assert ledger.can_release([1], 1.0, (plan * (1 - 1e-6), delta)).tolist() == [False]
    # a release with personal epsilons: the pure releases of its identities become one sum
    ledger.charge([1, 2], [0.05, 0.1], release="personal")
    np.testing.assert_array_equal(ledger.remaining([1, 2], (9.0, delta)),
                                  9.0 - ledger.spent([1, 2]))


# --- real processes: kill -9 in the middle of big charges, and two writers ---------------

_RELEASE_SOURCE = textwrap.dedent("""
    import numpy as np

    def kill_release(k, n=1_000_000, space=3_000_000):
        # distinct (7 is prime to space), overlapping the previous releases
        ids = (np.arange(n, dtype=np.int64) * 7 + k * 100_003) % space
        eps = 0.5 + 0.25 * (k % 3) if k % 2 == 0 else 0.1 + (ids % 10) / 10
        return ids, eps
""")
exec(_RELEASE_SOURCE)  # defines kill_release here, as in the child below

_CHILD = _RELEASE_SOURCE + textwrap.dedent("""
    import sys, time
    from fastldp.accounting.ledger import Ledger

    ledger = Ledger(sys.argv[1])
    # say when each statement of a charge starts, so that the kill can aim at it
    marks = {"INSERT INTO charges": "charges", "INSERT INTO sets": "sets",
             "INSERT INTO identities": "move", "COMMIT": "commit"}
    said = set()

    def trace(sql):
        for head, phase in marks.items():
            if sql.lstrip().startswith(head) and phase not in said:
                said.add(phase)
                print(f"phase {phase}", flush=True)

    ledger._con.set_trace_callback(trace)
    k = len(ledger.releases())
    while True:
        ids, eps = kill_release(k)
        said.clear()
        print(f"begin r{k}", flush=True)
        ledger.charge(ids, eps, release=f"r{k}")
        print(f"done r{k}", flush=True)
        k += 1
""")


def _env():
    return dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))


def _wait_for(proc, prefix, deadline=120.0):
    start = time.monotonic()
    while time.monotonic() - start < deadline:
        line = proc.stdout.readline()
        if not line:
            raise AssertionError(f"the child ended: {proc.stderr.read()}")
        if line.startswith(prefix):
            return line.split()
    raise AssertionError(f"no {prefix!r} line within {deadline} s")


@pytest.mark.slow
def test_kill_9_during_big_charges_leaves_whole_releases_only(tmp_path):
    path = tmp_path / "kill.db"
    script = tmp_path / "child.py"
    script.write_text(_CHILD)
    rng = np.random.default_rng(9)
    # each kill aims at one statement of a charge of 10^6 identities, a random moment
    # (up to 0.2 s) after it starts: inserting the rows, making the new release sets,
    # moving the identities (twice), and the COMMIT itself (before or after it lands)
    phases = ["charges", "sets", "move", "move", "commit"]
    delays = rng.uniform(0, 0.2, len(phases))
    delays[-1] = 0.0
    reported, absent_at_kill = set(), 0
    for round_, (phase, delay) in enumerate(zip(phases, delays)):
        proc = subprocess.Popen([sys.executable, str(script), str(path)], env=_env(),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            if round_ == 0:  # one whole release first: later ones move charged identities
                reported.add(_wait_for(proc, "done")[1])
            _, begun = _wait_for(proc, "begin")
            _wait_for(proc, f"phase {phase}")
            time.sleep(delay)
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
            for line in proc.stdout.read().splitlines():  # finished before the kill
                if line.startswith("done"):
                    reported.add(line.split()[1])
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.stdout.close()
            proc.stderr.close()
        with Ledger(path) as ledger:
            assert ledger.integrity_check() == "ok"
            releases = ledger.releases()
            names = [r.name for r in releases]
            absent_at_kill += begun not in names
            assert reported <= set(names)  # every commit the child saw survived
            con = ledger._con
            counts = dict(con.execute(
                "SELECT release, COUNT(*) FROM charges GROUP BY release").fetchall())
            for r in releases:  # whole: every row of each recorded release
                assert counts.pop(r.index) == r.n_identities == 1_000_000, r
            assert counts == {}  # and no rows of a release that is not recorded
            # and the identities' totals hold exactly the recorded releases
            (charged,) = con.execute("SELECT SUM(epsilon) FROM charges").fetchone()
            (spent,) = con.execute("SELECT SUM(spent) FROM identities").fetchone()
            assert spent == pytest.approx(charged, rel=1e-12), (phase, spent, charged)
    # the kills before the COMMIT statement left their release out
    assert absent_at_kill >= 4, absent_at_kill
    # the identities' totals agree with the releases that survived, identity by identity
    with Ledger(path) as ledger:
        releases = ledger.releases()
        assert [r.name for r in releases] == [f"r{k}" for k in range(len(releases))]
        expected = np.zeros(3_000_000)
        charged = np.zeros(3_000_000, dtype=bool)
        for k in range(len(releases)):
            ids, eps = kill_release(k)
            expected[ids] += eps
            charged[ids] = True
        rows = np.array(ledger._con.execute(
            "SELECT identity, spent FROM identities ORDER BY identity").fetchall())
        np.testing.assert_array_equal(rows[:, 0], np.flatnonzero(charged))
        np.testing.assert_allclose(rows[:, 1], expected[charged], rtol=1e-12)
        assert sum(g.n_identities for g in ledger.groups()) == charged.sum()


_WRITER = textwrap.dedent("""
    import os, sys, time
    import numpy as np
    from fastldp.accounting.ledger import Ledger

    path, tag, go = sys.argv[1], sys.argv[2], sys.argv[3]
    print("ready", flush=True)
    while not os.path.exists(go):  # both start together: they create the file at once
        time.sleep(0.005)
    ledger = Ledger(path)
    for k in range(6):
        ids = np.arange(40_000, dtype=np.int64) + 10_000 * k + (5_000 if tag == "b" else 0)
        t0 = time.time()
        ledger.charge(ids, 0.125 if tag == "a" else 0.25, release=f"{tag}{k}")
        print(f"{t0} {time.time()}", flush=True)
""")


@pytest.mark.slow
def test_two_processes_charging_at_once_both_charge_exactly_once(tmp_path):
    path = tmp_path / "shared.db"
    script = tmp_path / "writer.py"
    script.write_text(_WRITER)
    go = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, str(script), str(path), tag, str(go)],
                              env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for tag in ("a", "b")]
    for proc in procs:
        _wait_for(proc, "ready")
    go.write_text("")
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0 and len(out.splitlines()) == 6, err
    expected = np.zeros(105_000)
    for k in range(6):
        expected[10_000 * k + np.arange(40_000)] += 0.125
        expected[10_000 * k + 5_000 + np.arange(40_000)] += 0.25
    with Ledger(path) as ledger:
        assert sorted(r.name for r in ledger.releases()) == [
            f"{tag}{k}" for tag in "ab" for k in range(6)]
        np.testing.assert_allclose(ledger.spent(np.arange(105_000)), expected, rtol=1e-15)
        assert sum(g.n_identities for g in ledger.groups()) == np.count_nonzero(expected)
        assert ledger.integrity_check() == "ok"


# --- fastldp account --------------------------------------------------------------------

def _small_ledger(path):
    with Ledger(path) as ledger:
        ledger.charge([1, 2, 3, 4], 0.5, release="monday")
        ledger.charge([3, 4], [0.25, 1.0], release="tuesday")
        ledger.charge([5], 2.5, release="friday")


def test_account_prints_each_group_spend_and_remaining(tmp_path, capsys):
    path = tmp_path / "l.db"
    _small_ledger(path)
    assert main(["account", str(path), "--cap", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (f"fastldp account: {path}: 3 releases, 5 identities in 3 groups; "
                      f"cap epsilon 2 (basic composition)")
    rows = [line.split(None, 3) for line in out[2:]]
    assert rows == [["2", "0.5", "1.5", "monday"],
                    ["2", "0.75-1.5", "0.5", "monday, tuesday"],
                    ["1", "2.5", "-0.5", "friday"]]
    assert main(["account", str(path), "--json", "--cap", "2"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["identities"] == 5 and doc["cap"] == {"epsilon": 2.0, "delta": None}
    assert [r["name"] for r in doc["releases"]] == ["monday", "tuesday", "friday"]
    assert doc["groups"][1] == {"releases": ["monday", "tuesday"], "identities": 2,
                                "spent_min": 0.75, "spent_max": 1.5, "remaining": 0.5}
    assert main(["account", str(path)]) == 0  # no cap: spend only
    assert "remaining" not in capsys.readouterr().out


@pytest.mark.parametrize("make, argv, said", [
    (None, [], "No such ledger file"),
    ("text", [], "not a fastldp ledger"),
    ("folder", [], "A folder, not a ledger file"),
    ("ledger", ["--cap", "nan"], "'--cap' option of fastldp account"),
    ("ledger", ["--delta", "1e-6"], "'--delta' option of fastldp account needs --cap"),
    ("ledger", ["--cap", "1", "--delta", "2"], "'--delta' option of fastldp account"),
])
def test_account_errors_are_one_line(tmp_path, capsys, make, argv, said):
    path = tmp_path / "l.db"
    if make == "text":
        path.write_text("hello " * 200)
    elif make == "folder":
        path.mkdir()
    elif make == "ledger":
        _small_ledger(path)
    assert main(["account", str(path), *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fastldp: error: ") and err.count("\n") == 1, err
    assert said in err
    if make is None:
        assert not path.exists()  # reading a ledger never creates one


def _strict_json(text):
    """json.loads that refuses Infinity, -Infinity and NaN (which strict JSON does not have)."""
    def refuse(name):
        raise ValueError(f"not JSON: {name}")

    return json.loads(text, parse_constant=refuse)


def _raw_ledger_with_an_infinite_total(path):
    """A ledger as an older fastldp wrote it: two charges of 1e308 (it accepted them)."""
    _small_ledger(path)
    con = sqlite3.connect(path)
    con.execute("INSERT INTO releases(name, n, epsilon_min, epsilon_max, event, digest, created)"
                " VALUES ('huge', 1, 1e308, 1e308, NULL, 'x', '2026-01-01')")
    con.execute("UPDATE identities SET spent = spent + 1e308 + 1e308 WHERE identity = 5")
    con.commit()
    con.close()


def test_account_json_is_strict_json_always(tmp_path, capsys):
    from fastldp.accounting import RdpCurveEvent, epsilon_at, pure_dp_event

    path = tmp_path / "l.db"
    with Ledger(path) as ledger:
        # an RDP curve infinite above order 4, and a total variation term: finite at the
        # ledger's delta, but no finite epsilon composes it at delta = 1e-12
        curve = RdpCurveEvent.from_curve([2, 4, 8], [0.1, 0.2, np.inf], tv=1e-9)
        ledger.charge([1, 2], epsilon_at([curve], 1e-6), curve, release="curve")
        ledger.charge([2, 3], 0.5, release="pure")
    assert main(["account", str(path), "--json", "--cap", "1", "--delta", "1e-12"]) == 0
    doc = _strict_json(capsys.readouterr().out)  # the old code printed -Infinity here
    groups = {tuple(g["releases"]): g for g in doc["groups"]}
    assert groups[("curve",)]["remaining"] is None  # -inf: no finite epsilon at that delta
    assert groups[("curve", "pure")]["remaining"] is None
    assert groups[("pure",)]["remaining"] == 1.0 - epsilon_at([pure_dp_event(0.5)], 1e-12)
    assert doc["releases"][0]["event"]["rdp"] == [0.1, 0.2, "Infinity"]
    # the table says -inf where JSON says null
    assert main(["account", str(path), "--cap", "1", "--delta", "1e-12"]) == 0
    assert "-inf" in capsys.readouterr().out
    # a ledger an older fastldp filled with 1e308 charges: refused, not printed as Infinity
    old = tmp_path / "old.db"
    _raw_ledger_with_an_infinite_total(old)
    assert main(["account", str(old), "--json"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and "release 'huge' with epsilons 1e+308..1e+308, " \
        "outside (0, 700.0] (MAX_EPSILON" in captured.err, captured.err


def _damage_a_charges_page(path):
    """Zero the b-tree header of one leaf page of the charges table (not read by account).

    The file still opens (its header and schema pages are intact) and the releases and
    identities are read as before: only SQLite's integrity check sees the damage.
    """
    con = sqlite3.connect(path)
    (root,) = con.execute("SELECT rootpage FROM sqlite_master WHERE name = 'charges'").fetchone()
    (page_size,) = con.execute("PRAGMA page_size").fetchone()
    con.close()
    with open(path, "r+b") as fh:
        fh.seek((root - 1) * page_size)
        interior = fh.read(12)
        assert interior[0] == 2  # an interior page of an index b-tree (WITHOUT ROWID)
        child = int.from_bytes(interior[8:12], "big")  # its right-most child: a leaf
        fh.seek((child - 1) * page_size)
        fh.write(b"\x00" * 8)


def test_account_exits_1_with_one_line_on_a_damaged_file(tmp_path, capsys):
    path = tmp_path / "l.db"
    with Ledger(path) as ledger:
        ledger.charge(np.arange(50_000), 0.5, release="a")
        ledger.charge(np.arange(20_000, 30_000), 0.25, release="b")
    _damage_a_charges_page(path)
    with Ledger(path, readonly=True) as ledger:  # it opens and reads as if sound ...
        assert [g.n_identities for g in ledger.groups()] == [40_000, 10_000]
        assert ledger.integrity_check() != "ok"  # ... but SQLite's check fails
        with pytest.raises(LedgerDamagedError, match="integrity_check lists .* problems"):
            ledger.verify()
    assert main(["account", str(path)]) == 1  # the old code printed the table and exit 0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"fastldp: error: The ledger {path} is damaged: PRAGMA "
                                   f"integrity_check lists ")
    assert captured.err.count("\n") == 1 and "the first: Page " in captured.err
    assert main(["account", str(path), "--json"]) == 1
    assert capsys.readouterr().out == ""
    # pages overwritten in the middle of the file: damaged too (exit 1, one line)
    other = tmp_path / "m.db"
    with Ledger(other) as ledger:
        ledger.charge(np.arange(50_000), 0.5, release="a")
    size = other.stat().st_size
    with open(other, "r+b") as fh:
        fh.seek(size // 2)
        fh.write(b"\xff" * (size // 4))
    assert main(["account", str(other)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("fastldp: error: The ledger") and "damaged" in err
    assert err.count("\n") == 1
    # a sound ledger passes the check
    _small_ledger(tmp_path / "ok.db")
    with Ledger(tmp_path / "ok.db", readonly=True) as ledger:
        ledger.verify()
