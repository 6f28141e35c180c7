"""One voice on the command line: the same flags everywhere, --version, one noun for repetitions.

``--quiet`` and its alias ``--no-progress`` are one flag on every command
that shows progress; ``fastldp --version`` prints the version; a budget is
``--epsilon`` (``demo --eps`` still works, with a note); repeated runs are
"repetitions" in flags (``--trials`` still works, with a note), in Python
(``trials=`` warns) and in what the runs print.
"""

import argparse
import importlib
import textwrap
import warnings

import pytest

import fastldp
from fastldp import cli
from fastldp.experiments import registry
from fastldp.experiments import reproduce as harness_reproduce

#: the commands that draw a progress bar
PROGRESS_COMMANDS = {"run", "reproduce", "decode", "simulate"}


def _subcommands(parser):
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return sub.choices


def _deprecated_note(err: str, old: str, new: str) -> None:
    assert f"fastldp: warning: {old} is deprecated" in err and f"use {new}" in err, err


def test_quiet_and_no_progress_are_one_flag_on_every_command_that_shows_progress():
    commands = _subcommands(cli.build_parser())
    having = set()
    for name, parser in commands.items():
        flags = [a for a in parser._actions
                 if {"--quiet", "--no-progress"} & set(a.option_strings)]
        if not flags:
            continue
        having.add(name)
        # one action, both spellings, one destination
        assert len(flags) == 1, name
        assert set(flags[0].option_strings) == {"--quiet", "--no-progress"}, name
        assert flags[0].dest == "quiet", name
        for spelling in ("--quiet", "--no-progress"):
            args = [name, *_required(name), spelling]
            assert cli.build_parser().parse_args(args).quiet is True, (name, spelling)
        assert cli.build_parser().parse_args([name, *_required(name)]).quiet is False
    assert having == PROGRESS_COMMANDS


def _required(command: str) -> list:
    return {"run": ["spec.toml"], "reproduce": ["ablation"], "decode": ["r.parquet"],
            "simulate": ["--out", "r.parquet"]}[command]


def test_version(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out == f"fastldp {fastldp.__version__}\n"


def test_demo_takes_epsilon_and_eps_still_works_with_a_note(capsys):
    parser = cli.build_parser()
    assert parser.parse_args(["demo", "--epsilon", "0.5"]).epsilon == 0.5
    assert capsys.readouterr().err == ""
    assert parser.parse_args(["demo", "--eps", "0.25"]).epsilon == 0.25
    _deprecated_note(capsys.readouterr().err, "--eps", "--epsilon")
    assert parser.parse_args(["demo"]).epsilon == 0.75
    help_text = _subcommands(parser)["demo"].format_help()
    assert "--epsilon" in help_text and "--eps " not in help_text  # the old name is hidden
    assert cli.main(["demo", "--n", "2000", "--d1", "8", "--d2", "8", "--s", "8", "--k", "2",
                     "--eps", "0.5", "--threads", "1"]) == 0
    captured = capsys.readouterr()
    assert "epsilon=0.5" in captured.out
    _deprecated_note(captured.err, "--eps", "--epsilon")


def test_audit_takes_epsilon_and_eps_still_works_with_a_note(capsys):
    parser = cli.build_parser()
    assert parser.parse_args(["audit", "--epsilon", "0.5"]).epsilon == 0.5
    assert capsys.readouterr().err == ""
    assert parser.parse_args(["audit", "--eps", "2"]).epsilon == 2.0
    _deprecated_note(capsys.readouterr().err, "--eps", "--epsilon")
    assert parser.parse_args(["audit"]).epsilon == 1.0
    help_text = _subcommands(parser)["audit"].format_help()
    assert "--epsilon" in help_text and "--eps " not in help_text



def test_audit_epsilon_reaches_the_audit(monkeypatch, capsys):
    import fastldp.audit

    seen = []

    def fake_audit_all(names, *, epsilon, **options):
        seen.append(epsilon)
        return []

    monkeypatch.setattr(fastldp.audit, "audit_all", fake_audit_all)
    monkeypatch.setattr(fastldp.audit, "format_table", lambda rows: "")
    assert cli.main(["audit", "grr", "--epsilon", "0.5"]) == 0
    assert cli.main(["audit", "grr", "--eps", "3"]) == 0
    assert seen == [0.5, 3.0]


@pytest.fixture
def fake_experiments():
    """Two registered experiments that record what they were run with."""
    calls = []

    class Done:
        text, failed, files, figures = "", 0, [], []

    def new_style(*, quick, out, workers, data_dir, progress, figures, file, repetitions=None):
        calls.append(("new", repetitions))
        return Done()

    def old_style(*, quick, out, workers, data_dir, progress, figures, file, trials=None):
        calls.append(("old", trials))
        return Done()

    names = {"zz-new": new_style, "zz-old": old_style}
    for name, run in names.items():
        registry.register_experiment(registry.Experiment(
            name=name, family="test", description="a test", run=run,
            takes_repetitions=(name == "zz-new"), takes_trials=(name == "zz-old")))
    yield calls
    for name in names:
        del registry._EXPERIMENTS[name]


def test_reproduce_takes_repetitions_and_trials_still_works_with_a_note(fake_experiments,
                                                                        capsys):
    calls = fake_experiments
    assert cli.main(["reproduce", "zz-new", "--repetitions", "3", "--quiet"]) == 0
    assert capsys.readouterr().err == ""
    assert cli.main(["reproduce", "zz-new", "--trials", "4", "--quiet"]) == 0
    _deprecated_note(capsys.readouterr().err, "--trials", "--repetitions")
    # a family function that still names the count 'trials' gets it under that name
    assert cli.main(["reproduce", "zz-old", "--repetitions", "5", "--quiet"]) == 0
    assert cli.main(["reproduce", "zz-new", "--quiet"]) == 0
    assert calls == [("new", 3), ("new", 4), ("old", 5), ("new", None)]
    help_text = _subcommands(cli.build_parser())["reproduce"].format_help()
    assert "--repetitions" in help_text and "--trials" not in help_text
    assert "zz-new" in help_text and "zz-old" in help_text  # both take repetitions


def test_python_reproduce_trials_is_a_deprecated_name(fake_experiments):
    calls = fake_experiments
    with pytest.warns(DeprecationWarning, match="'trials' parameter of reproduce.*'repetitions'"):
        harness_reproduce("zz-new", trials=2, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        harness_reproduce("zz-new", repetitions=6, progress=False)
    assert calls == [("new", 2), ("new", 6)]
    with pytest.warns(DeprecationWarning), pytest.raises(TypeError, match="both"):
        harness_reproduce("zz-new", repetitions=2, trials=2)
    with pytest.raises(ValueError, match="'repetitions' parameter of reproduce does not apply "
                                         "to 'ablation'.*zz-new"):
        harness_reproduce("ablation", repetitions=2)


def test_specs_count_repetitions():
    from fastldp.experiments.relations import spec_from_dict
    from fastldp.experiments.vectors import spec_from_dict as vectors_spec

    base = {"name": "r", "methods": ["JPRS-Global"]}
    assert spec_from_dict({**base, "repetitions": 3}).seeds == (0, 1, 2)  # seeds' other name
    assert spec_from_dict({**base, "repetitions": [4, 7]}).seeds == (4, 7)
    quick = spec_from_dict({**base, "seeds": 5, "quick": {"repetitions": 2}}, quick=True)
    assert quick.seeds == (0, 1)
    with pytest.raises(ValueError, match="both 'seeds' and 'repetitions'"):
        spec_from_dict({**base, "seeds": 2, "repetitions": 2})
    tiny = {"family": "vectors", "name": "v", "methods": ["RPC"], "seeds": 5}
    assert vectors_spec(tiny, repetitions=2).seeds == (0, 1)
    with pytest.warns(DeprecationWarning, match="'trials' parameter of spec_from_dict"):
        assert vectors_spec(tiny, trials=3).seeds == (0, 1, 2)


def test_runs_print_repetitions(tmp_path, monkeypatch):
    import io

    from fastldp.experiments.relations import build_report as relations_report
    from fastldp.experiments.relations import run as relations_run
    from fastldp.experiments.relations import spec_from_dict
    from fastldp.experiments.vectors import reproduce as vectors_reproduce

    # the package exports the function under the module's name: fetch the module itself
    vectors_module = importlib.import_module("fastldp.experiments.vectors.reproduce")

    spec = tmp_path / "tiny.toml"
    spec.write_text(textwrap.dedent("""
        family = "vectors"
        name = "tiny"
        description = "a tiny grid"
        methods = ["RPC", "Collision"]
        seeds = 3
        [fixed]
        n = 200
        d = 8
        m = 2
        [[grid]]
        eps = [1.0]
    """))
    # the shipped rpc-frequency, with its grid replaced by the tiny one above
    monkeypatch.setattr(vectors_module, "spec_path", lambda experiment: spec)
    out = io.StringIO()
    vectors_reproduce("rpc-frequency", out=tmp_path / "v", repetitions=2, progress=False,
                      figures=False, file=out)
    text = out.getvalue()
    assert "(2 repetitions)" in text and "2 repetitions." in text
    assert "trial" not in text.lower()

    summary = relations_run(spec_from_dict({
        "name": "r", "methods": ["JPRS-Global"], "seeds": 1,
        "fixed": {"shape": [8, 8], "s": 8, "k": 2}, "grid": [{"n": [300]}]}),
        tmp_path / "r", progress=False)
    report = relations_report(summary.table, tmp_path / "r" / "report", figures=False)
    assert "1 repetition." in report.text and "over repetitions" in report.text
    assert "seeds" not in report.text
