"""The compare and best-config pages say what peak memory was measured, as the run page does:
GPU or process memory, in MiB below 1 GiB, and nothing when none was measured: in /best/'s
answer, the configs Welch's test cannot tell from it and the table of clearly slower ones."""

from __future__ import annotations

import re

import pytest

from leaderboard import services
from leaderboard.models import LeaderboardEntry, Run
from leaderboard.services.board import mark_test_weights
from tests.support.measured_configs import measure


@pytest.fixture
def measured(user, models, hardware, enqueued, make_result) -> list[str]:
    """Three measured draft-simple configs of real weights (the fake results' GPU memory is
    123,456,789 bytes): two alike, which the best page names as indistinguishable, and one
    clearly slower, in its table beside the baseline."""
    mark_test_weights(models=models.values(), test_weights=False)
    jobs = [
        measure(user, hardware, make_result, n_max, decode)
        # Two requests each, as their baseline's: each output compared, all lossless.
        for n_max, decode in ((4, [100.0, 101.0]), (3, [100.0, 101.0]), (2, [70.0, 71.0]))
    ]
    return [job.config.key for job in jobs]


def set_memory(*, peak: int, kind: str) -> None:
    """Every run's measured memory, and every row's (a row's is its best run's)."""
    Run.objects.update(peak_memory_bytes=peak, memory_kind=kind)
    LeaderboardEntry.objects.update(peak_memory_bytes=peak)
    services.raise_board_version()


def compare_memory_row(client, keys: list[str]) -> list[str]:
    page = client.get("/compare/", {"keys": ",".join(keys)}).content.decode()
    row = re.search(r"<tr><th>Peak memory</th>(.*?)</tr>", page).group(1)
    return re.findall(r'<td class="num">(.*?)</td>', row)


def best_page(client) -> dict[str, str]:
    page = client.get("/best/", {"target": "tiny-qwen3", "memory_gb": "10"}).content.decode()
    # One ranking (one workload, GPU and release): one answer.
    assert page.count('<section class="best-answer"') == 1
    answer = re.search(r'<p class="answer" id="best-answer">(.*?)</p>', page).group(1)
    tied = re.search(r'<p class="sub best-tied">(.*?)</p>', page).group(1)
    table = re.search(r'<table class="best-table compact">(.*?)</table>', page, re.S).group(1)
    body = table[table.index("<tbody>") :]
    # Config, tok/s, interval, then the peak memory.
    cells = re.findall(r"<tr><td>.*?</td>(?:<td[^>]*>.*?</td>){2}<td[^>]*>(.*?)</td>", body)
    return {"answer": answer, "tied": tied, "cells": cells}


def test_gpu_memory_under_a_gibibyte_reads_in_mib_on_both_pages(client, measured):
    assert compare_memory_row(client, measured) == ["117.7 MiB GPU memory"] * 3
    best = best_page(client)
    assert "peak 117.7 MiB GPU memory" in best["answer"]
    assert "tok/s, 117.7 MiB GPU memory)" in best["tied"]
    # The clearly slower config and the baseline (a candidate too: no drafting).
    assert best["cells"] == ["117.7 MiB GPU memory"] * 2
    assert "0.1 GiB" not in best["answer"] + best["tied"]


def test_process_memory_of_a_cpu_build_says_so_on_both_pages(client, measured):
    set_memory(peak=3 * 2**30 + 2**29, kind="process")
    assert compare_memory_row(client, measured) == ["3.5 GiB process memory"] * 3
    best = best_page(client)
    assert "peak 3.5 GiB process memory" in best["answer"]
    assert "tok/s, 3.5 GiB process memory)" in best["tied"]
    assert best["cells"] == ["3.5 GiB process memory"] * 2
    assert "GPU memory" not in best["answer"] + best["tied"]


def test_no_memory_measured_shows_no_figure_on_either_page(client, measured):
    set_memory(peak=0, kind="")
    assert compare_memory_row(client, measured) == ["–"] * 3
    best = best_page(client)  # a row of 0 bytes still fits any memory
    assert "peak" not in best["answer"] and "GiB" not in best["answer"]
    assert "MiB" not in best["tied"] and "GiB" not in best["tied"]
    assert best["cells"] == ["–"] * 2
