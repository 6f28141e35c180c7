"""Shared test settings: two tiers, and property tests derandomized so CI is reproducible.

Tiers: ``python -m pytest`` runs the default tier (every test not marked
``slow``); ``python -m pytest --slow`` (or ``FASTLDP_SLOW=1``) runs the slow
tier too (simulation-size statistics, fuzzing with thousands of cases, kill -9
loops, the browser, full reproductions). ``.ci/run`` runs both. Every slow
test has a fast test of the same code path in the default tier.

The fuzz suite (tests/test_fuzz_*.py) fixes its example counts per test with
:func:`fuzz`, so it fits its CI budget (under a minute on two cores);
``HYPOTHESIS_PROFILE=fastldp-fuzz-long`` multiplies every count by 20 for an
on-demand deep run.
"""

import os

import pytest

from hypothesis import HealthCheck, settings

settings.register_profile("fastldp", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("fastldp-fuzz-long", parent=settings.get_profile("fastldp"))
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "fastldp"))

_FUZZ_SCALE = 20 if os.environ.get("HYPOTHESIS_PROFILE") == "fastldp-fuzz-long" else 1


def fuzz(max_examples: int):
    """Settings of one fuzz property: ``max_examples`` (times the long profile's scale)."""
    return settings(max_examples=max_examples * _FUZZ_SCALE,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def pytest_addoption(parser):
    parser.addoption("--slow", action="store_true", default=False,
                     help="also run the slow tier (tests marked slow); FASTLDP_SLOW=1 does too")


def _run_slow(config) -> bool:
    return bool(config.getoption("--slow")) or os.environ.get("FASTLDP_SLOW", "") not in ("", "0")


#: Tests moved to the slow tier to keep the default tier under 6 minutes on 2 cores (measured
#: 2026-12-05: 7,351 tests in 6 min 31 s before the move). Each keeps a quick sibling of the same
#: code path in the default tier: the other audit channels and controls (test_audit*.py), the
#: non-browser dashboard tests, the other reproduce-quick and experiments tests, PEM's other
#: string tests, the CLI-default audit tests of the same channels.
MOVED_TO_SLOW_FOR_TIME = (
    "tests/test_audit.py::test_every_channel_passes[sample-sdp-fit]",
    "tests/test_audit.py::test_every_negative_control_is_caught[control:sample-sdp-fit-noise@4eps]",
    "tests/test_stubs.py::test_kernel_stubs_match_runtime",
    "tests/test_regression_experiments.py::test_rows_do_not_depend_on_which_cells_ran_before",
    "tests/test_regression_experiments.py::test_nested_rows_equal_each_cell_run_alone",
    "tests/test_audit_vectors.py::test_cli_audit_new_entries_and_controls",
    "tests/test_audit_vectors.py::test_shuffle_controls_are_caught_on_other_seeds",
    "tests/test_heavyhitters_pem.py::test_eight_byte_words_give_the_same_top_items_at_16_bytes",
    "tests/test_audit_channels_list.py::test_exact_verdicts_are_the_same_without_the_sampler",
    "tests/test_typing.py::test_mypy_strict_accepts_user_style_calls",
    "tests/test_toplevel.py::test_type_checkers_see_the_lazy_exports",
    "tests/test_reproduce_quick.py::test_quick_ablation_prints_the_banner_above_its_tables",
    "tests/test_experiments_report.py::test_figures_when_matplotlib_is_there",
    # the browser (the slow tier's own description): the page's assets and API stay in the default tier
    "tests/test_service_dashboard.py::test_oracle_dashboard_shows_the_estimate_exactly",
    "tests/test_service_dashboard.py::test_jprs_dashboard_draws_the_matrix_heat_map_exactly",
    "tests/test_service_dashboard.py::test_rpc_dashboard_draws_the_mean_vector",
    "tests/test_service_dashboard.py::test_labelled_oracle_shows_its_categories",
    "tests/test_service_dashboard.py::test_long_labels_stay_inside_their_panels_at_1280_px",
    # 2026-12-05: the default tier had grown to 6 min 31 s on 2 quiet cores; each below has a
    # default-tier sibling of the same code path (named after it)
    "tests/test_service_store.py::test_second_serve_on_the_same_store_and_port_refuses_before_"
    "recovery",  # ::test_second_serve_on_another_port_is_refused_and_the_first_keeps_counting
    "tests/test_service_ingest.py::test_health_answers_within_50_ms_while_16_mib_batches_are_"
    "parsed",  # ::test_max_rows_is_a_public_limit (the same parsing; latency is load-sensitive)
    "tests/test_service_store.py::test_differencing_two_estimates_around_one_report[1]",  # [None]
    "tests/test_heavyhitters_text.py::test_ended_strings_pool_their_reports_over_the_later_levels",
    # ^ ::test_pem_recovers_the_exact_top_16_at_epsilon_30_on_title_shaped_strings (pools them too)
    "tests/test_protocol_everywhere.py::test_fastldp_audit_lists_and_audits_it",
    "tests/test_ranges.py::test_fastldp_audit_lists_and_runs_its_channels",
    # ^ both: tests/test_multidim.py::test_fastldp_audit_lists_and_runs_its_channels (same CLI)
    "tests/test_multidim_marginals.py::test_report_files_and_fastldp_decode",
    # ^ tests/test_multidim.py::test_report_files_and_fastldp_decode
    "tests/test_multidim.py::test_a_collector_serves_it_and_decodes_it_live[SampledMean]",
    "tests/test_multidim.py::test_a_collector_serves_it_and_decodes_it_live[SPL-OLH]",
    "tests/test_ranges_haar.py::test_a_collector_serves_it_and_decodes_it_live",
    "tests/test_protocol_everywhere.py::test_a_collector_serves_it_and_decodes_it_live",
    # ^ all four: tests/test_multidim.py::test_a_collector_serves_it_and_decodes_it_live[SMP-OUE]
    # and tests/test_ranges.py::test_a_collector_serves_it_and_decodes_it_live
    "tests/test_audit.py::test_every_channel_passes[shuffled-sum]",
    "tests/test_audit.py::test_every_channel_passes[shuffled-bits]",
    "tests/test_audit.py::test_every_negative_control_is_caught[control:shuffled-",
    # ^ the same channels and controls: tests/test_audit_vectors.py (with the CLI defaults)
    "tests/test_audit.py::test_every_channel_passes[lspl-losue-rounds]",
    "tests/test_audit.py::test_every_channel_passes[lsmp-losue-rounds]",
    "tests/test_audit.py::test_every_negative_control_is_caught[control:lspl-losue-rounds@",
    "tests/test_audit.py::test_every_negative_control_is_caught[control:lsmp-losue-rounds@",
    # ^ their one-round channels [lspl-losue], [lsmp-losue] and controls stay
    "tests/test_service_fuzz.py::test_fuzz_bodies_are_refused_quick[olh-arrow]",  # [oue-arrow]
    "tests/test_streaming_oracles.py::test_oracle_split_and_merge_is_bit_identical[the-levels-o",
    "tests/test_streaming_oracles.py::test_oracle_split_and_merge_is_bit_identical[the-levels-s",
    "tests/test_streaming_oracles.py::test_oracle_split_and_merge_is_bit_identical[the-continuo"
    "us-object]",
    "tests/test_streaming_oracles.py::test_oracle_split_and_merge_is_bit_identical[the-continuo"
    "us-same-dtype]",
    "tests/test_streaming_oracles.py::test_oracle_split_and_merge_is_bit_identical[she-discrete-"
    "continuous-object]",
    "tests/test_streaming_oracles.py::test_oracle_split_and_merge_is_bit_identical[she-discrete-"
    "continuous-same-dtype]",
    # ^ the same oracles' [...-none] runs stay (the dtype variants change only the input reading)
    "tests/test_audit_shuffle.py::test_honest_views_pass_every_test[shuffled-sum]",  # [shuffled-bits]
    "tests/test_cli_validation.py::test_serve_profile_is_written_at_a_graceful_stop",
    # ^ ::test_serve_sigterm_right_after_collecting_on_is_a_graceful_stop
    "tests/test_heavyhitters_items.py::test_decodes_never_return_an_impossible_string[PEM]",
    # ^ its [SFP] and [TreeHist] runs, and PEM's text tests
    "tests/test_service.py::test_personal_budgets_matrix_restart_and_offline_decode",
    # ^ ::test_live_estimate_equals_the_offline_estimate_bit_for_bit
    "tests/test_heavyhitters_text.py::test_treehist_and_sfp_give_str_for_str_and_never_invalid_utf8"
    "[SFP]",  # its [TreeHist] run; tests/test_heavyhitters_items.py (SFP's strings are possible)
)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.nodeid.startswith(MOVED_TO_SLOW_FOR_TIME):
            item.add_marker(pytest.mark.slow)
    if _run_slow(config):
        return
    # a test named on the command line (path::name) runs whatever its tier
    named = {arg.split("[")[0] for arg in config.args if "::" in arg}
    slow = [item for item in items if item.get_closest_marker("slow") is not None
            and item.nodeid.split("[")[0] not in named
            and not any(item.nodeid.endswith(n.split("tests/", 1)[-1]) for n in named)]
    if not slow:
        return
    dropped = {id(item) for item in slow}
    keep = [item for item in items if id(item) not in dropped]
    config.hook.pytest_deselected(items=slow)
    items[:] = keep
    config._fastldp_slow_deselected = len(slow)


def pytest_report_header(config):
    if _run_slow(config):
        return "fastldp: default and slow tiers (--slow)"
    return "fastldp: default tier only; the slow tier runs with --slow (or FASTLDP_SLOW=1)"


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    n = getattr(config, "_fastldp_slow_deselected", 0)
    if n:
        terminalreporter.write_line(f"fastldp: {n} slow-tier tests not run (python -m pytest "
                                    "--slow runs them)")


@pytest.fixture(autouse=True)
def _protocol_registrations_stay_in_their_test():
    """A class a test (or a docs example run in this process) registers with
    ``fastldp.protocol.register`` is forgotten after it, so later tests see the package's
    registry as it is."""
    from fastldp import protocol

    saved = dict(protocol._REGISTERED)
    yield
    protocol._REGISTERED.clear()
    protocol._REGISTERED.update(saved)
