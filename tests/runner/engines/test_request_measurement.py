"""One request's measurements (runner.engines.measure): /metrics, repetition, missing timings."""

import httpx
import pytest

from runner.engines.measure import (
    distinct_ngram_ratio,
    measure_request,
    parse_metrics,
    repeating_tail,
)
from runner.errors import EngineResponseError
from runner.protocols import RequestSpec

METRICS = """# HELP llamacpp:spec_decode_num_draft_tokens_total Speculative: Total draft tokens generated
# TYPE llamacpp:spec_decode_num_draft_tokens_total counter
llamacpp:spec_decode_num_draft_tokens_total 150
llamacpp:spec_decode_num_accepted_tokens_total 60
llamacpp:spec_decode_num_drafts_total 10
llamacpp:predicted_tokens_seconds 12.5
llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="0"} 9
llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="1"} 7
"""


def test_metrics_are_parsed_with_per_position_counters():
    counters = parse_metrics(METRICS)
    assert (counters.draft_tokens, counters.accepted_tokens, counters.verify_steps) == (150, 60, 10)
    assert counters.accepted_per_position == {0: 9, 1: 7}
    delta = counters.minus(parse_metrics(METRICS.replace(" 150", " 100")))
    assert delta.draft_tokens == 50 and delta.accepted_tokens == 0


def test_repetitive_output_has_a_low_distinct_ngram_ratio():
    assert distinct_ngram_ratio([1, 2, 3] * 100) < 0.05
    assert distinct_ngram_ratio(list(range(300))) == 1.0


def test_a_response_without_timings_is_an_error_not_a_result():
    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/metrics":
            return httpx.Response(200, text=METRICS)
        # A stream with no tokens and no timings, as early -bs runs on CUDA (b11434) recorded.
        return httpx.Response(200, text='data: {"content": "", "stop": true}\n\n')

    client = httpx.Client(transport=httpx.MockTransport(answer))
    spec = RequestSpec("measure", 0, None, 16, "hello", 1)
    with pytest.raises(EngineResponseError, match="no timings"):
        measure_request(client, "http://server", spec, timeout_s=5)


def test_the_repeating_tail_is_the_longest_one_and_its_shortest_cycle():
    assert repeating_tail([1, 2, 3] * 10) == (3, 30)
    assert repeating_tail([9, 8, 7, 6, 5]) == (None, 0)
    assert repeating_tail([]) == (None, 0)
    # A cycle longer than the search window is not looked for.
    assert repeating_tail(list(range(600)) * 2) == (None, 0)
