"""pure-ldp on the real-text workloads (issue 34, item 7: "beside pure-ldp where it runs"): where it does not, by how much.

pure-ldp 1.2.0's string heavy hitters is Apple's SFP (``pure_ldp.heavy_hitters.apple_sfp``)
over an alphabet of characters; its PEM and TreeHist take bit strings and test
every value of a level's domain, so only SFP can take text. Its server's
``find_heavy_hitters`` estimates, at each of the ``L / 2`` fragment
positions, every record ``(puzzle hash, two characters)``:
``256 x (|alphabet| + 1)^2`` calls of its CMS ``estimate`` in Python (the
``+ 1`` is its padding character). This script

1. runs pure-ldp's SFP end to end (client, aggregate, ``find_heavy_hitters``
   with k = 16, CMS 256 x 256 as fastldp's SFP, eps = 4, the alphabet given
   as the set of characters that occur) on ``--n`` users of the
   standard library's ``def`` lines cut to ``--probe-bytes`` bytes, so that
   it finishes, and times each part;
2. from the measured seconds per ``estimate`` call, prints the server time
   the same code needs on each workload of ``fastldp reproduce
   heavy-hitters-text`` with its longest string (in characters: pure-ldp's
   ``max_string_length``) and its real alphabet, and the client time at
   10^6 users from the measured microseconds per user.

Nothing is downloaded. Run: ``python bench/heavyhitters_text_peer.py [--n 2000]
[--probe-bytes 4]`` (needs ``pip install '.[bench-peer]'`` and, for the words,
the ``text`` extra).
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import sys
import time
from pathlib import Path

import numpy as np

from fastldp.heavyhitters import data

_COMPARE = Path(__file__).with_name("heavyhitters_compare.py")


def _numpy2_shim():
    """pure-ldp needs the NumPy 2 shim of bench/heavyhitters_compare.py (its docstring says why)."""
    spec = importlib.util.spec_from_file_location("heavyhitters_compare", _COMPARE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.numpy2_shim()


def probe(n: int, probe_bytes: int, eps: float, seed: int) -> dict:
    from pure_ldp.frequency_oracles.apple_cms import CMSClient, CMSServer
    from pure_ldp.heavy_hitters.apple_sfp import SFPClient, SFPServer

    users, _ = data.draw_text(data.python_signatures(item_bytes=64), n,
                              rng=np.random.default_rng(seed))
    users = [u[:probe_bytes] for u in users]
    alphabet = set("".join(users))
    random.seed(seed)
    np.random.seed(seed)
    server_fo = CMSServer(eps, 256, 256)
    client_fo = CMSClient(eps, server_fo.get_hash_funcs(), 256)
    client = SFPClient(eps, 2, probe_bytes, alphabet=alphabet, fo_client=client_fo)
    server = SFPServer(eps, 2, probe_bytes, alphabet=alphabet, fo_server=server_fo)
    t = time.perf_counter()
    reports = [client.privatise(u) for u in users]
    t_client = time.perf_counter() - t
    t = time.perf_counter()
    for r in reports:
        server.aggregate(r)
    t_aggregate = time.perf_counter() - t
    t = time.perf_counter()
    server.find_heavy_hitters(k=16)
    t_find = time.perf_counter() - t
    calls = 256 * (len(alphabet) + 1) ** 2 * (probe_bytes // 2)
    return {"n": n, "bytes": probe_bytes, "alphabet": len(alphabet), "client": t_client,
            "aggregate": t_aggregate, "find": t_find, "calls": calls,
            "per_call": t_find / calls, "per_user": (t_client + t_aggregate) / n}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--probe-bytes", type=int, default=4)
    ap.add_argument("--eps", type=float, default=4.0)
    ap.add_argument("--seed", type=int, default=34)
    args = ap.parse_args(argv)
    try:
        import pure_ldp  # noqa: F401
    except ImportError:
        print("pure-ldp is not installed: pip install '.[bench-peer]'", file=sys.stderr)
        return 1
    _numpy2_shim()
    import warnings

    warnings.simplefilter("ignore")  # pure-ldp warns that small n gives inaccurate estimates
    p = probe(args.n, args.probe_bytes, args.eps, args.seed)
    print(f"pure-ldp SFP, {p['n']} users, def lines cut to {p['bytes']} bytes, alphabet "
          f"{p['alphabet']} characters, eps {args.eps:g}, k = 16:")
    print(f"  client {p['client']:.2f} s, aggregate {p['aggregate']:.2f} s "
          f"({p['per_user'] * 1e6:.0f} us per user), find_heavy_hitters {p['find']:.1f} s for "
          f"{p['calls']:,} estimate calls ({p['per_call'] * 1e3:.2f} ms each)")
    print("what the same code needs on the real-text workloads (10^6 users):")
    print(f"{'workload':>11} {'chars':>5} {'alphabet':>8} {'estimate calls':>15} "
          f"{'server':>10} {'client+aggregate':>17}")
    for name, field in (("signatures", 64), ("words", 32)):
        try:
            strings, _ = (data.python_signatures(item_bytes=field) if name == "signatures"
                          else data.multilingual_words(item_bytes=field))
        except ImportError as exc:
            print(f"{name:>11}: not measured ({exc})")
            continue
        size = len(set("".join(strings)))
        chars = max(len(s) for s in strings)  # pure-ldp's max_string_length counts characters
        calls = 256 * (size + 1) ** 2 * ((chars + 1) // 2)
        server_h = calls * p["per_call"] / 3600
        client_h = 1e6 * p["per_user"] / 3600
        print(f"{name:>11} {chars:>5} {size:>8} {calls:>15,} {server_h:>9.0f}h {client_h:>16.2f}h")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
