"""The filters the pages read numbers through (leaderboard.templatetags): a 95% interval of a
speed as it is, "no interval" when there is none, and one that reached below zero says its batch
cannot place its mean; a non-finite stored figure shows as a dash; memory in MiB below a GiB
and not at all when nothing was measured; a llama-server command that runs when pasted."""

from __future__ import annotations

import pytest

from leaderboard.selectors.evidence.provenance import runnable
from leaderboard.templatetags.run_display import memory_text
from leaderboard.templatetags.specboard import interval, select_options


@pytest.mark.parametrize(
    ("low", "high", "text"),
    [
        (95.25, 104.75, "95.2 – 104.8"),
        (1200.0, 1300.0, "1,200.0 – 1,300.0"),
        (0.0, 12.0, "0.0 – 12.0"),
        (-50.8, 115.3, "0.0 – 115.3 (too few requests to place the mean)"),
        (None, 12.0, "no interval"),
        (12.0, None, "no interval"),
    ],
)
def test_an_interval_reads_as_what_it_says(low, high, text):
    assert interval(low, high) == text


@pytest.mark.parametrize("stored", [float("nan"), float("inf"), -float("inf")])
def test_a_non_finite_stored_figure_shows_as_a_dash_never_as_nan_or_inf(stored):
    from leaderboard.templatetags.specboard import number, percent, times

    assert number(stored) == percent(stored) == times(stored) == "–"
    assert interval(stored, 10.0) == "no interval" and memory_text(stored) == ""


def test_memory_reads_in_mib_below_a_gib_and_not_at_all_when_nothing_was_measured():
    assert memory_text(312 * 2**20) == "312.0 MiB"
    assert memory_text(3 * 2**30) == "3.0 GiB"
    assert memory_text(0) == "" and memory_text(None) == "" and memory_text(True) == ""


def test_the_command_gets_the_library_path_of_a_built_engines_binary():
    command = "/root/.cache/specboard/engines/b1-cpu/bin/llama-server -m '/m/a b.gguf' --port 8"
    assert runnable(command) == (
        "LD_LIBRARY_PATH=/root/.cache/specboard/engines/b1-cpu/bin " + command
    )
    assert runnable("llama-server -m a.gguf") == "llama-server -m a.gguf"  # found on PATH
    assert runnable("/odd dir/llama-server") == "/odd dir/llama-server"  # not one word
    assert (
        runnable("'/odd dir/llama-server' -m x")
        == "LD_LIBRARY_PATH='/odd dir' '/odd dir/llama-server' -m x"
    )
    assert runnable("unbalanced 'quote") == "unbalanced 'quote"


def test_a_run_on_several_gpus_reads_each_gpus_peak_and_energy():
    from leaderboard.stored_results import StoredResult
    from leaderboard.templatetags.run_display import per_gpu

    def run(gpus):
        return StoredResult.of({"summary": {"gpus": gpus}}).gpus

    two = [
        {"index": 0, "peak_memory_bytes": 12 * 2**30, "energy_joules": 310.54},
        {"index": 1, "peak_memory_bytes": 10 * 2**30, "energy_joules": None},
    ]
    assert per_gpu(run(two)) == ["GPU 0: 12.0 GiB, 310.5 J", "GPU 1: 10.0 GiB"]
    # One GPU says nothing the peak memory does not; old or damaged results say nothing at all.
    assert per_gpu(run(two[:1])) == [] and per_gpu(run(None)) == []
    assert per_gpu(StoredResult.of("garbage").gpus) == []
    assert per_gpu(run(["x", {"peak_memory_bytes": float("nan"), "energy_joules": -1}])) == [
        "GPU 0: memory not measured",
        "GPU 1: memory not measured",
    ]


def test_select_options_escape_their_text_and_mark_the_chosen_value():
    html = select_options([("a<b", 'GPU "A" & co'), ("gpu-2", "GPU 2")], "gpu-2")
    assert html == (
        '<option value="a&lt;b">GPU &quot;A&quot; &amp; co</option>'
        '<option value="gpu-2" selected>GPU 2</option>'
    )
    assert "selected" not in select_options([("gpu-2", "GPU 2")], "")


def test_select_options_kept_once_built_mark_the_choice_of_each_page_as_built_afresh():
    # The options of a list are built once and the chosen one marked per call: the same HTML as
    # each option formatted on its own, whatever the values hold.
    from django.utils.html import format_html_join
    from django.utils.safestring import mark_safe

    choices = [("a<b", 'GPU "A" & co'), (7, "seven"), ("x'y", "<i>"), ("", "none"), (7, "again")]
    for selected in ("a<b", 7, "7", "x'y", "", "missing", "<option"):
        expected = format_html_join(
            "",
            '<option value="{}"{}>{}</option>',
            (
                (value, mark_safe(" selected") if str(value) == str(selected) else "", text)
                for value, text in choices
            ),
        )
        assert select_options(choices, selected) == expected
