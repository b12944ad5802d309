"""The concurrency protocol across configs: /api/v1/concurrency, the /concurrency/ page's data.

One target on one hardware (the pair with the most concurrency rows when the query names none,
or names one without rows): per config its levels' aggregate tok/s, intervals, per-request
decode, time to first token and derived speedup, with its crossover; each level's latency
percentiles and goodput at the objective `tpot_ms` (default 50 ms), and the trade-off of
throughput per GPU against tok/s per user (`pareto`).
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard import selectors
from leaderboard.api import serializers as s
from leaderboard.selectors.answers.serving import DEFINITIONS, concurrency_pareto
from runner.stats import DEFAULT_TPOT_OBJECTIVE_MS


class Concurrency(APIView):
    """Aggregate tok/s against concurrency for the configs of one target on one hardware."""

    @extend_schema(parameters=[s.ConcurrencyQuerySerializer], responses=s.ConcurrencySerializer)
    def get(self, request: Request) -> Response:
        query = s.ConcurrencyQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        pairs = selectors.concurrency_targets()
        asked = (query.validated_data.get("target", ""), query.validated_data.get("hardware", ""))
        known = {(target, hardware) for target, hardware, _ in pairs}
        target, hardware = asked if asked in known else (pairs[0][:2] if pairs else ("", ""))
        objective = query.validated_data.get("tpot_ms", DEFAULT_TPOT_OBJECTIVE_MS)
        series = (
            selectors.concurrency_series(
                target_name=target, hardware_slug=hardware, tpot_ms_objective=objective
            )
            if target
            else {"levels": [], "lines": []}
        )
        body = {"target": target, "hardware": hardware} | series
        body |= {
            "tpot_ms_objective": objective,
            "latency_definitions": DEFINITIONS,
            "pareto": concurrency_pareto(lines=series["lines"], hardware_slug=hardware),
        }
        return Response(s.ConcurrencySerializer(body).data)
