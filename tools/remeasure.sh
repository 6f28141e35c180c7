#!/usr/bin/env bash
# Re-measure every speed, time and memory figure of README.md, one script after
# the other, on a quiet machine (nothing else running: the figures are wall-clock
# times on all cores). Each script prints the lines of README it produces, in
# README's words, after a "README line(s)" heading; compare them with README and
# copy the figures over (README quotes a range where repeated runs vary).
#
#   tools/remeasure.sh            # everything: about 30 minutes on 2 quiet cores
#   tools/remeasure.sh --quick    # every script at its smallest setting (a smoke run)
#
# It measures the installed fastldp (README's set-up commands), like every script
# it runs; to measure a working tree, run it with PYTHONPATH=src after
# `python setup.py build_ext --inplace`. The peer rows of the oracle table need
# `pip install '.[bench-peer]'`, the Dask rows `pip install '.[distributed]'`,
# and the real-data row of Run times the small sample files: pass their folder
# as FASTLDP_FIGURES_DATA=DIR.
#
# tests/test_readme_figures.py checks that every script README names for a
# figure is run here.
set -u
cd "$(dirname "$0")/.."

quick=0
if [ "${1:-}" = "--quick" ]; then
    quick=1
fi
data=()
if [ -n "${FASTLDP_FIGURES_DATA:-}" ]; then
    data=(--data "$FASTLDP_FIGURES_DATA")
fi

status=0
run() {
    echo
    echo "=== $* ($(date '+%H:%M:%S'), load average $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo n/a))"
    "$@" || { echo "=== FAILED: $*"; status=1; }
}

echo "fastldp: $(python -c 'import fastldp; print(fastldp.__version__, fastldp.__file__)')"
echo "machine: $(nproc 2>/dev/null || echo '?') cores, $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2-)"

if [ "$quick" = 1 ]; then
    run python bench/compare.py --quick
    run python bench/oracle_compare.py --n 20000 --repeats 1 --peer-n 500 --peer-olh-n 100
    run python bench/rpc_compare.py --n 2000 --repeats 1
    run python bench/regression_compare.py --n 2000 --d 64
    run python bench/normal_sampler.py --quick --repeats 1
    run python bench/local_lasso.py --quick --repeats 1
    run python bench/long_format.py --n 20000
    run python bench/stream_decode.py --quick --repeats 1
    run python bench/table5_check.py --seeds 1 --support-rule raw
    run python bench/noise_throughput.py --quick
    run python bench/longitudinal_compare.py --n 10000 --repeat 1
    run python bench/longitudinal_memo.py --users 10000 --rounds 3
    run python bench/ledger_charge.py --identities 200000 --batch 100000
    run python bench/heavyhitters_compare.py
    run python bench/multidim_compare.py --n 20000 --peer-n 500 --repeat 1 --reps 5 \
        --rep-n 300 --log "${TMPDIR:-/tmp}/multidim_compare-quick.txt"
    run python bench/ranges_compare.py --users 5000 --reps 2 --speed-users 100000
    run python bench/serve_load.py --quick
    run python bench/serve_load.py --quick --rate 100000
    run python tools/readme_figures.py --quick ${data[@]+"${data[@]}"}
else
    run python bench/compare.py
    run python bench/oracle_compare.py
    run python bench/rpc_compare.py
    run python bench/regression_compare.py
    run python bench/normal_sampler.py
    run python bench/local_lasso.py
    run python bench/long_format.py
    run python bench/stream_decode.py
    run python bench/table5_check.py --seeds 5
    run python bench/noise_throughput.py
    run python bench/longitudinal_compare.py
    run python bench/longitudinal_memo.py
    run python bench/ledger_charge.py
    run python bench/heavyhitters_compare.py
    run python bench/multidim_compare.py
    run python bench/ranges_compare.py --users 200000 --reps 5
    run python bench/serve_load.py                  # saturation (closed loop)
    run python bench/serve_load.py --rate 100000    # latency at a paced 100,000 reports/s
    run python tools/readme_figures.py ${data[@]+"${data[@]}"}
fi
exit $status
