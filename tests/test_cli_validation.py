"""The command line checks what it is given before it does anything (issue 32, finding 7).

Every numeric flag of every command is parsed by one helper (``cli._number``:
kind, range, finiteness) and a bad value is argparse's one error line naming
the flag, exit status 2, never an ``OverflowError`` traceback; the list of
flags is read from the parser, so a new flag without the helper fails here.
``simulate --send`` counts failed batches (exit 1, or 2 when none was
accepted) and refuses an ``--epsilon`` a fixed-epsilon collector would not
use; ``fastldp serve`` says "collecting on ..." only once the spec, the
tokens file, the port and the store are in place, and each of their errors
is one line naming the file's role.
"""

import argparse
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from fastldp import cli
from fastldp.cli import main

#: Numeric flags checked by their command instead of by ``cli._number``: account's
#: ``--cap`` and ``--delta`` (``_account_cap`` names the flag, the range and the value).
CHECKED_BY_COMMAND = {("account", "--cap"), ("account", "--delta")}

#: Arguments that keep a command cheap should a bad value get through (it must not).
BASE = {"demo": ["--n", "1000", "--d1", "4", "--d2", "4", "--s", "2", "--k", "1"],
        "simulate": ["--n", "10", "--out", "r.parquet"], "audit": ["--list"]}


def _commands(parser, path=()):
    """``(path, parser)`` of every command, nested ones (``data export``) included."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, path + (name,))
    if path:
        yield path, parser


def _takes_a_value(action) -> bool:
    return bool(action.option_strings) and action.nargs != 0 and not isinstance(
        action, (argparse._HelpAction, argparse._VersionAction))


def _is_numeric(action) -> bool:
    if isinstance(action.type, cli._Number) or action.type in (int, float):
        return True
    if action.type not in (None, str, Path):
        return True  # an unknown type: it must be reviewed (and be the helper)
    default = action.default
    return isinstance(default, (int, float)) and not isinstance(default, bool)


def _numeric_flags():
    found = []
    for path, parser in _commands(cli.build_parser()):
        for action in parser._actions:
            if _takes_a_value(action) and _is_numeric(action):
                found.append((path, parser, action))
    return found


NUMERIC = _numeric_flags()


def _positionals(parser) -> list:
    """Values for a command's required positional arguments (never read: parsing fails)."""
    values = []
    for action in parser._actions:
        if action.option_strings or isinstance(action, argparse._SubParsersAction):
            continue
        if action.nargs in ("*", "?"):
            continue
        values.append(next(iter(action.choices)) if action.choices else "x")
    return values


def _bad_values(action) -> list:
    values = ["1e400", "-1e400", "nan", "NaN", "inf", "-inf", "ten", ""]
    number = action.type
    if not isinstance(number, cli._Number):  # checked by the command: the universal ones
        return values + ["-5", "0"]
    if number.kind is int:
        values += ["1.5", "1e-3", "0.999"]
    if number.lo is not None:
        values.append(str(number.lo) if number.lo_open else str(number.lo - 1))
        if -5 < number.lo:
            values.append("-5")
    if number.hi is not None:
        values.append(str(number.hi) if number.hi_open else str(number.hi + 1))
        if number.hi < 70_000:
            values.append("70000")
    return values


def _exit_status(argv) -> int:
    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code


def test_numeric_flags_are_found():
    names = {(" ".join(path), action.option_strings[0]) for path, _, action in NUMERIC}
    # the findings of the review, and a flag of each command
    assert {("simulate", "--n"), ("simulate", "--row-group"), ("simulate", "--clients"),
            ("simulate", "--batch-size"), ("simulate", "--first-identity"),
            ("simulate", "--seed"), ("simulate", "--epsilon"), ("serve", "--max-body"),
            ("serve", "--threads"), ("serve", "--segment-rows"), ("serve", "--port"),
            ("serve", "--rate"), ("demo", "--n"), ("demo", "--d1"), ("demo", "--epsilon"),
            ("audit", "--n"), ("audit", "--epsilon"), ("run", "--workers"),
            ("reproduce", "--repetitions"), ("report", "--slope-min-n"),
            ("decode", "--threads")} <= names


def test_every_numeric_flag_is_parsed_by_the_number_helper():
    unchecked = [(" ".join(path), action.option_strings[0]) for path, _, action in NUMERIC
                 if not isinstance(action.type, cli._Number)
                 and (" ".join(path), action.option_strings[0]) not in CHECKED_BY_COMMAND]
    assert unchecked == []


@pytest.mark.parametrize("path, parser, action", NUMERIC,
                         ids=[f"{' '.join(p)} {a.option_strings[0]}" for p, _, a in NUMERIC])
def test_every_numeric_flag_refuses_bad_values_in_one_line(path, parser, action, tmp_path,
                                                           monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # should anything run, it writes here
    command = " ".join(path)
    for value in _bad_values(action):
        argv = [*path, *_positionals(parser), *BASE.get(command, []),
                f"{action.option_strings[0]}={value}"]
        assert _exit_status(argv) == 2, (argv, capsys.readouterr())
        err = capsys.readouterr().err
        assert "Traceback" not in err, argv
        lines = [line for line in err.splitlines() if "error:" in line]
        assert len(lines) == 1, (argv, err)
        assert any(flag in lines[0] for flag in action.option_strings), (argv, err)
        if isinstance(action.type, cli._Number):
            assert f"expected {action.type.expected()}, got {value!r}" in lines[0], lines[0]


def test_good_values_are_read_exactly():
    parse = cli.build_parser().parse_args
    args = parse(["simulate", "--n", "1e6", "--first-identity", "18446744073709551615",
                  "--seed", "18446744073709551615", "--row-group", "1_000", "--epsilon", "0.5",
                  "2"])
    assert (args.n, args.first_identity, args.seed, args.row_group, args.epsilon) == (
        1_000_000, 2**64 - 1, 2**64 - 1, 1000, [0.5, 2.0])
    assert type(args.n) is int and type(args.first_identity) is int
    assert parse(["serve", "--port", "65535"]).port == 65535
    assert parse(["serve", "--port", "1", "--rate", "1e-3"]).rate == 0.001
    assert parse(["demo", "--n", "2.0e3", "--epsilon", "1e-300"]).n == 2000
    assert parse(["report", "x.csv", "--slope-min-n", "0"]).slope_min_n == 0
    number = cli._number(float, 0, 1, lo_open=True)
    assert number("1") == 1.0 and number.expected() == "a finite number in (0, 1]"
    assert cli._number(int, 0, 2**64 - 1).expected() == "an integer in [0, 2**64 - 1]"


@pytest.mark.parametrize("argv", [
    ["simulate", "--n", "1e400"], ["simulate", "--row-group", "1e400"],
    ["simulate", "--clients", "1e400"], ["serve", "--max-body", "1e400"],
    ["serve", "--threads", "1e400"], ["serve", "--segment-rows", "1e400"],
], ids=lambda argv: " ".join(argv[:2]))
def test_huge_counts_are_one_line_not_an_overflow_traceback(argv, capsys):
    # before: int(float('1e400')) raised OverflowError out of argparse, a traceback
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and f"argument {argv[1]}: expected an integer" in err


def test_simulate_epsilon_of_a_fixed_mechanism_must_be_its_own(tmp_path, capsys):
    # olh-4096 privatizes at its epsilon 1: --epsilon 2 was ignored without a word
    out = tmp_path / "r.parquet"
    assert main(["simulate", "--mechanism", "olh-4096", "--epsilon", "2", "--n", "10",
                 "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fastldp: error: ") and err.count("\n") == 1
    assert "--epsilon" in err and "is 2" in err and "fixed epsilon 1" in err
    assert not out.exists()
    assert main(["simulate", "--mechanism", "olh-4096", "--epsilon", "1", "--n", "10",
                 "--out", str(out), "--quiet"]) == 0
    assert out.exists()


# ---------------------------------------------------------------- simulate --send
pytest.importorskip("httpx")
pytest.importorskip("uvicorn")
pytest.importorskip("pyarrow")

from fastldp.service.testing import free_port, running_server  # noqa: E402


@pytest.fixture(scope="module")
def collector(tmp_path_factory):
    """An OLH collector (fixed epsilon 1) with a client 'narrow' bound to identities 0..99."""
    with running_server(tmp_path_factory.mktemp("collector"), "olh-4096",
                        tokens={"narrow": (0, 99)}) as server:
        yield server


def test_simulate_send_counts_failed_batches_and_exits_1(collector, capsys):
    # batches of identities 100..299 are outside the token's range: 403
    status = main(["simulate", "--send", collector.url, "--token", collector.tokens["narrow"],
                   "--n", "300", "--batch-size", "100", "--clients", "2", "--quiet"])
    captured = capsys.readouterr()
    assert status == 1, captured
    assert "100 reports sent" in captured.out
    assert "Traceback" not in captured.err
    assert captured.err.startswith("fastldp: error: 2 of 3 batches failed (200 reports not "
                                   "accepted)") and "forbidden_identity" in captured.err
    assert captured.err.count("\n") == 1


def test_simulate_send_first_identity_below_zero_is_refused(collector, capsys):
    # before: a thread traceback, "0 reports sent", exit status 0
    with pytest.raises(SystemExit) as info:
        main(["simulate", "--send", collector.url, "--token", collector.token, "--n", "10",
              "--first-identity", "-5", "--quiet"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "argument --first-identity: expected an integer in [0, 2**64 - 1], got '-5'" in err
    assert "Traceback" not in err


def test_simulate_send_identities_past_2_64_are_refused(collector, capsys):
    assert main(["simulate", "--send", collector.url, "--token", collector.token, "--n", "10",
                 "--first-identity", str(2**64 - 5), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "--first-identity" in err and "--n" in err and "2**64" in err


def test_a_failure_in_a_client_thread_is_counted_without_a_traceback(collector, capsys,
                                                                      monkeypatch):
    from fastldp.service.client import Client

    real, calls, lock = Client.send, [], threading.Lock()

    def second_call_fails(self, *args, **kwargs):
        with lock:
            calls.append(1)
            if len(calls) == 2:
                raise RuntimeError("planted failure")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Client, "send", second_call_fails)
    status = main(["simulate", "--send", collector.url, "--token", collector.token,
                   "--n", "300", "--batch-size", "100", "--clients", "1",
                   "--first-identity", "5000", "--quiet"])
    captured = capsys.readouterr()
    assert status == 1, captured
    assert "Traceback" not in captured.err
    assert "1 of 3 batches failed (100 reports not accepted)" in captured.err
    assert "RuntimeError: planted failure" in captured.err
    assert "200 reports sent" in captured.out  # the batch after the failure was sent too
    monkeypatch.setattr(Client, "send", real)
    # the failed batch's identities were not stored: they are accepted now, the others not
    assert main(["simulate", "--send", collector.url, "--token", collector.token, "--n", "100",
                 "--first-identity", "5100", "--quiet"]) == 0
    assert main(["simulate", "--send", collector.url, "--token", collector.token, "--n", "100",
                 "--first-identity", "5200", "--quiet"]) == 2
    assert "409" in capsys.readouterr().err


def test_simulate_send_epsilon_must_match_a_fixed_epsilon_collector(collector, capsys):
    for budgets in (["2"], ["0.5", "2"]):
        assert main(["simulate", "--send", collector.url, "--token", collector.token,
                     "--n", "10", "--first-identity", "7000", "--quiet",
                     "--epsilon", *budgets]) == 2
        err = capsys.readouterr().err
        assert err.startswith("fastldp: error: ") and err.count("\n") == 1, err
        assert f"is {' '.join(budgets)}" in err and "fixed epsilon 1" in err
    # nothing was sent: the same identities are accepted (not a 409) with the collector's epsilon
    assert main(["simulate", "--send", collector.url, "--token", collector.token, "--n", "10",
                 "--first-identity", "7000", "--quiet", "--epsilon", "1"]) == 0
    assert "10 reports sent" in capsys.readouterr().out


# ---------------------------------------------------------------- fastldp serve
def _tokens_file(folder: Path) -> Path:
    from fastldp.service.auth import hash_token

    path = folder / "tokens.txt"
    path.write_text(f"test {hash_token('a-token')}\n")
    return path


def _serve(folder: Path, *extra: str, store=None, tokens=None, mechanism="olh-4096",
           port=None, timeout=60):
    """Run ``fastldp serve`` that must fail: ``(returncode, stdout, stderr)``."""
    cmd = [sys.executable, "-m", "fastldp", "serve", "--mechanism", mechanism,
           "--store", str(store or folder / "store"),
           "--tokens", str(tokens or _tokens_file(folder)),
           "--port", str(port or free_port()), *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return proc.returncode, proc.stdout, proc.stderr


def _refused_in_one_line(result, *said):
    code, out, err = result
    assert code == 2, result
    assert "collecting on" not in out, out
    assert "Traceback" not in err, err
    assert err.startswith("fastldp: error: ") and err.count("\n") == 1, err
    for text in said:
        assert text in err, err


def test_serve_port_70000_is_refused(tmp_path):
    # before: "collecting on http://127.0.0.1:70000" and a server listening on 4464
    code, out, err = _serve(tmp_path, port=70000, timeout=30)
    assert code == 2 and "collecting on" not in out
    assert "argument --port: expected an integer in [1, 65535], got '70000'" in err
    assert not (tmp_path / "store").exists()


def test_serve_missing_tokens_file_names_it_before_collecting(tmp_path):
    missing = tmp_path / "no-such-tokens.txt"
    _refused_in_one_line(_serve(tmp_path, tokens=missing),
                         f"the tokens file {missing} cannot be read")
    assert not (tmp_path / "store").exists()  # nothing touched
    bad = tmp_path / "bad-tokens.txt"
    bad.write_text("phones not-a-hash\n")
    _refused_in_one_line(_serve(tmp_path, tokens=bad), f"the tokens file {bad}, line 1")


@pytest.mark.parametrize("spec", [
    "no-such-spec.json",
    '{"mechanism": "OLH", "params": {"domain_size": -1, "epsilon": 1.0, "codebook_seed": 1}}',
], ids=["missing", "bad-params"])
def test_serve_bad_mechanism_spec_is_one_line(tmp_path, spec):
    _refused_in_one_line(_serve(tmp_path, mechanism=spec), "the mechanism spec")
    assert not (tmp_path / "store").exists()


def test_serve_unusable_store_is_one_line(tmp_path):
    # the store's database path is taken by a folder: sqlite3.OperationalError before
    store = tmp_path / "store"
    (store / "index.sqlite").mkdir(parents=True)
    _refused_in_one_line(_serve(tmp_path, store=store), f"the store {store}")


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0,
                    reason="permissions do not bind root")
def test_serve_read_only_store_is_one_line(tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    store.chmod(0o555)
    try:
        _refused_in_one_line(_serve(tmp_path, store=store), f"the store {store}")
    finally:
        store.chmod(0o755)


def test_serve_store_of_another_mechanism_is_one_line_before_collecting(tmp_path):
    from fastldp import mechanisms
    from fastldp.service.app import probe_reports
    from fastldp.service.store import Store

    mech = mechanisms.from_spec("jprs-4096")
    shape, dtype = probe_reports(mech)
    Store(tmp_path / "store", mech, report_shape=shape, report_dtype=dtype).close()
    _refused_in_one_line(_serve(tmp_path), "the store")


def test_serve_port_in_use_touches_no_store(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        _refused_in_one_line(_serve(tmp_path, port=port), f"the port {port}")
    assert not (tmp_path / "store").exists()  # before: recovery ran, then the bind failed


def test_serve_missing_tls_files_are_one_line(tmp_path):
    _refused_in_one_line(_serve(tmp_path, "--tls-cert", str(tmp_path / "no.pem"),
                                "--tls-key", str(tmp_path / "no.key")),
                         "the TLS certificate")
    assert not (tmp_path / "store").exists()


def _start(tmp_path, env=None):
    port = free_port()
    cmd = [sys.executable, "-m", "fastldp", "serve", "--mechanism", "olh-4096",
           "--store", str(tmp_path / "store"), "--tokens", str(_tokens_file(tmp_path)),
           "--port", str(port)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, **(env or {})))
    return proc, port


def _first_line(proc, timeout=60.0) -> str:
    box = []
    reader = threading.Thread(target=lambda: box.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    assert box, "fastldp serve printed nothing"
    return box[0]


def test_serve_says_collecting_only_once_it_answers(tmp_path):
    import httpx

    proc, port = _start(tmp_path)
    try:
        line = _first_line(proc)
        assert f"collecting on http://127.0.0.1:{port} into" in line, line
        # at once: the port listens (before: the line came before the store, the tokens and
        # the bind, and this connection was refused)
        answer = httpx.get(f"http://127.0.0.1:{port}/v1/health", timeout=30)
        assert answer.status_code == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    assert proc.returncode == 0  # a graceful stop (before: killed by the re-raised SIGTERM)
    assert proc.stderr.read().strip() == ""


def test_serve_sigterm_right_after_collecting_on_is_a_graceful_stop(tmp_path):
    # the SIGTERM may come before uvicorn installs its handler: still a stop, exit 0
    proc, port = _start(tmp_path)
    try:
        assert "collecting on" in _first_line(proc)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    assert proc.returncode == 0, proc.stderr.read()


def test_serve_profile_is_written_at_a_graceful_stop(tmp_path):
    import pstats

    profile = tmp_path / "serve.prof"
    proc, port = _start(tmp_path, env={"FASTLDP_SERVE_PROFILE": str(profile)})
    try:
        assert "collecting on" in _first_line(proc)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    assert proc.returncode == 0
    assert pstats.Stats(str(profile)).total_calls > 0
