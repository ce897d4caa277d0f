"""libFuzzer on the artifact parser (and the COP, command-word, IO and quantization code it
feeds) under ASan and UBSan, for a bounded time, starting from valid sample artifacts."""

from __future__ import annotations

import os
import re

import pytest

from tests.runtime.runtime_helpers import build_dir, cmake_build, require, run

# A bounded smoke run in the suite; FUZZ_SECONDS=600 for a real campaign (docs/testing.md).
FUZZ_SECONDS = int(os.environ.get("FUZZ_SECONDS", "10"))

pytestmark = pytest.mark.needs_clang


@pytest.fixture(scope="module")
def fuzz_build(request):
    require("clang++")
    return cmake_build(build_dir(request, "fuzz"), "host", "host", "-DETHOSU_RT_FUZZ=ON",
                       "-DCMAKE_C_COMPILER=clang", "-DCMAKE_CXX_COMPILER=clang++",
                       build_type="RelWithDebInfo", targets=("fuzz_artifact", "make_fuzz_seeds"))


def test_seeds_are_valid_artifacts(fuzz_build, tmp_path):
    run([fuzz_build / "bin" / "make_fuzz_seeds", tmp_path])
    seeds = sorted(tmp_path.glob("seed*.bin"))
    assert len(seeds) == 4
    # One pass over each seed: no finding, and each parses (exercised past the parser).
    result = run([fuzz_build / "bin" / "fuzz_artifact", *seeds])
    assert "Executed" in result.stderr


def test_fuzz_the_parser_for_a_bounded_time(fuzz_build, tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    run([fuzz_build / "bin" / "make_fuzz_seeds", corpus])
    result = run([fuzz_build / "bin" / "fuzz_artifact", f"-max_total_time={FUZZ_SECONDS}",
                  f"-dict={fuzz_build / 'bin' / 'artifact.dict'}", "-print_final_stats=1",
                  "-rss_limit_mb=2048", corpus], timeout=FUZZ_SECONDS + 120)
    runs = int(re.search(r"stat::number_of_executed_units:\s+(\d+)", result.stderr).group(1))
    print(f"\nfuzz_artifact: {runs} executions in {FUZZ_SECONDS} s")
    assert runs > 10000
