"""Orchestrating a run (runner.benchmark) without an engine: paired rounds in ABBA order.

A fake engine session answers with records built by the runner's own ``build_record``, so the
result model checks them like a real run's; a shared timeline records which side's engine was
alive and what each one sent, in order. On a fake NVML of two GPUs a run records each GPU's
peak memory and energy, and a split over GPUs the host does not show is refused.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from runner import benchmark, protocols
from runner.benchmark import run_benchmark
from runner.config import parse_config
from runner.engines.build import Engine
from runner.engines.measure import SpecCounters, build_record
from runner.errors import BenchmarkCancelled, ConfigError
from runner.fidelity import TopTwo
from runner.gguf.inspect import inspect_model
from runner.protocols import plan_requests
from runner.results import load_result
from runner.schedule import schedule
from tests.support.fake_nvml import FakeNvml, install, rtx_3090s

GIB = 2**30
ENGINE = Engine(server_path="/fake/llama-server", release="b11434", backend="cpu")
OUTPUT = 16
# The speculative side decodes twice as fast as its baseline (milliseconds per request).
DECODE_MS = {"speculative": 50.0, "baseline": 100.0}
PEAK_BYTES = {"speculative": 300 * 2**20, "baseline": 100 * 2**20}


@dataclasses.dataclass
class Timeline:
    """What every fake engine did, in order, and how the host drifts (a slowdown per request)."""

    drift: float = 0.0
    events: list[tuple] = dataclasses.field(default_factory=list)
    sent: int = 0
    alive: int = 0
    sessions: int = 0
    # Output token that the speculative side changes (request's measured number, position).
    diverge_at: dict[int, int] = dataclasses.field(default_factory=dict)
    spec_measured: int = 0


class FakeSession:
    """An engine session: a pid of its own, records built as the real engine's are."""

    argv = ["llama-server", "--fake"]

    def __init__(self, config, timeline: Timeline, slots: int) -> None:
        self.side = "speculative" if config.is_speculative else "baseline"
        self.timeline = timeline
        self.slots = slots
        timeline.sessions += 1
        self.number = timeline.sessions
        self.command = f"llama-server --fake {self.side}"

    @property
    def pid(self) -> int:
        return 1000 + self.number

    load_seconds = 0.25

    def start(self) -> None:
        self.timeline.alive += 1
        self.timeline.events.append(("start", self.side, self.number, self.timeline.alive))

    def stop(self) -> None:
        self.timeline.alive -= 1
        self.timeline.events.append(("stop", self.side, self.number))

    def measure(self, spec) -> dict:
        timeline = self.timeline
        decode_ms = DECODE_MS[self.side] * (1.0 + timeline.drift * timeline.sent)
        timeline.sent += 1
        tokens = list(range(100, 100 + spec.output_tokens))
        if self.side == "speculative" and spec.phase == "measure":
            position = timeline.diverge_at.get(timeline.spec_measured)
            if position is not None:
                tokens[position] = 7
            timeline.spec_measured += 1
        speculative = self.side == "speculative"
        # Each verify step yields its own token beside the one accepted draft, after the first
        # token (runner.evidence: 1 + steps + accepted <= predicted_n).
        steps = (spec.output_tokens - 1) // 2 if speculative else 0
        counters = SpecCounters(
            draft_tokens=2.0 * steps,
            accepted_tokens=float(steps),
            verify_steps=float(steps),
            accepted_per_position={1: float(steps), 2: 0.0} if speculative else {},
        )
        timings = {
            "prompt_n": 4,
            "prompt_ms": 2.0,
            "predicted_n": spec.output_tokens,
            "predicted_ms": decode_ms,
            "predicted_per_second": (spec.output_tokens - 1) / decode_ms * 1000.0,
        }
        if speculative:
            timings |= {"draft_n": 2 * steps, "draft_n_accepted": steps}
        record = build_record(
            spec=spec,
            timings=timings,
            tokens=tokens,
            wall_s=(decode_ms + 3.0) / 1000.0,
            ttft_s=None,
            counters=counters,
            ttft_source="server prompt time",
        )
        timeline.events.append(("measure", self.side, self.number, spec.phase, decode_ms))
        return record

    def top_two(self, spec) -> list[TopTwo]:
        self.timeline.events.append(("top_two", self.side, self.number))
        # A clear winner everywhere: a flipped token is a mismatch, judged at once.
        return [TopTwo(token=100 + i, runner_up=1, margin=5.0) for i in range(spec.output_tokens)]

    def log_text(self) -> str:
        return f"log of session {self.number}\n"

    def recent_log(self) -> str:
        return ""


class FakeSampler:
    """The memory sampler of one pid: the peak of that pid's side, nothing of another's."""

    sides: dict[int, str] = {}

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.kind = "process"
        self.gpu_peaks = None  # off NVML: no GPU of its own to report

    def start(self) -> FakeSampler:
        return self

    def stop(self) -> int:
        return PEAK_BYTES[self.sides[self.pid]]


@pytest.fixture
def timeline(monkeypatch) -> Timeline:
    found = Timeline()

    def open_fake(config, *, slots=1, **_):
        session = FakeSession(config, found, slots)
        FakeSampler.sides[session.pid] = session.side
        return session

    monkeypatch.setattr(benchmark, "open_session", open_fake)
    monkeypatch.setattr(benchmark, "MemorySampler", FakeSampler)
    return found


def paired_config(runs: int = 4, warmup: int = 1):
    return parse_config(
        {"target_model": "tiny-qwen3.gguf", "draft_model": "tiny-qwen3.gguf",
         "spec_types": "draft-simple", "n_max": 2, "threads": 2,
         "protocol": {"name": "quick", "runs": runs, "warmup": warmup, "n_predict": OUTPUT}}
    )  # fmt: skip


def run(tiny_models, config, **options):
    models_dir = Path(next(iter(tiny_models.values()))).parent
    return run_benchmark(config, models_dir=models_dir, engine=ENGINE, **options)


def session_order(timeline: Timeline) -> list[str]:
    return [event[1] for event in timeline.events if event[0] == "start"]


# The order itself (the rounds' plan is tests/runner/protocols/test_request_plans.py).


def test_each_concurrency_level_runs_its_own_rounds_in_sessions_of_its_slots():
    config = parse_config(
        {"target_model": "tiny-qwen3.gguf", "draft_model": "tiny-qwen3.gguf",
         "spec_types": "draft-simple",
         "protocol": {"name": "concurrency", "levels": [1, 2], "rounds": 2, "warmup": 1,
                      "input_tokens": 8, "output_tokens": 4}}
    )  # fmt: skip
    plan = protocols.plan_requests(config, vocab_size=2000)
    planned = schedule(config, plan, paired=True, graded=True, rounds=2)
    sessions, rounds = planned.sessions, [r.model_dump() for r in planned.rounds]
    assert [(s.side, s.slots, s.measured) for s in sessions] == [
        ("baseline", 1, [0]),
        ("speculative", 1, [0, 1]),
        ("baseline", 1, [1]),
        ("baseline", 2, [2, 3]),
        ("speculative", 2, [2, 3, 4, 5]),
        ("baseline", 2, [4, 5]),
    ]
    assert rounds == [
        {"round": 0, "concurrency": 1, "order": ["baseline", "speculative"], "request_indices": [0]},
        {"round": 1, "concurrency": 1, "order": ["speculative", "baseline"], "request_indices": [1]},
        {"round": 0, "concurrency": 2, "order": ["baseline", "speculative"],
         "request_indices": [2, 3]},
        {"round": 1, "concurrency": 2, "order": ["speculative", "baseline"],
         "request_indices": [4, 5]},
    ]  # fmt: skip
    # Every session warms up before it measures; each level's last baseline takes the margins.
    for session in sessions:
        assert session.plan[0].phase == "warmup"
    assert [s.margin_indices for s in sessions] == [None, None, [0, 1], None, None, [2, 3, 4, 5]]


# A paired run with fake engines.


def test_a_paired_run_measures_baseline_speculative_speculative_baseline(timeline, tiny_models):
    result = run(tiny_models, paired_config(runs=4), with_baseline=True)
    # ABBA: the speculative side's two rounds meet, so they share one engine session.
    assert session_order(timeline) == ["baseline", "speculative", "baseline"]
    rounds = [r.model_dump() for r in result.provenance.paired_rounds]
    assert rounds == [
        {"round": 0, "concurrency": None, "order": ["baseline", "speculative"],
         "request_indices": [0, 1]},
        {"round": 1, "concurrency": None, "order": ["speculative", "baseline"],
         "request_indices": [2, 3]},
    ]  # fmt: skip
    # Every session warmed up before it measured.
    phases: dict[int, list[str]] = {}
    for event in timeline.events:
        if event[0] == "measure":
            phases.setdefault(event[2], []).append(event[3])
    assert phases == {
        1: ["warmup", "measure", "measure"],
        2: ["warmup"] + ["measure"] * 4,
        3: ["warmup", "measure", "measure"],
    }


def test_four_rounds_alternate_sides_and_never_keep_two_engines_alive(timeline, tiny_models):
    result = run(tiny_models, paired_config(runs=8), with_baseline=True, rounds=4)
    assert session_order(timeline) == [
        "baseline", "speculative", "baseline", "speculative", "baseline",
    ]  # fmt: skip
    assert [r.order for r in result.provenance.paired_rounds] == [
        ["baseline", "speculative"],
        ["speculative", "baseline"],
        ["baseline", "speculative"],
        ["speculative", "baseline"],
    ]
    assert [r.request_indices for r in result.provenance.paired_rounds] == [
        [0, 1], [2, 3], [4, 5], [6, 7],
    ]  # fmt: skip
    assert {event[3] for event in timeline.events if event[0] == "start"} == {1}


def test_each_side_keeps_its_own_records_in_plan_order(timeline, tiny_models):
    timeline.drift = 0.01
    result = run(tiny_models, paired_config(runs=4), with_baseline=True)
    sent = {"speculative": [], "baseline": []}
    for event in timeline.events:
        if event[0] == "measure" and event[3] == "measure":
            sent[event[1]].append(event[4])
    assert [r.predicted_ms for r in result.requests] == sent["speculative"]
    assert [r.predicted_ms for r in result.baseline.requests] == sent["baseline"]
    assert [r.index for r in result.baseline.requests] == [0, 1, 2, 3]
    assert all(r.draft_n > 0 for r in result.requests)
    assert all(r.draft_n == 0 for r in result.baseline.requests)


def test_a_drift_over_the_run_falls_on_both_sides(timeline, tiny_models):
    # The host slows 5% per request sent; the speculative side is truly twice as fast. Run
    # first and its baseline after (the order before rounds), the speedup reads 2.45; in ABBA
    # rounds both sides' measured requests sit at the same mean time (1.95: mean speeds are
    # means of reciprocals, so only the linear part of a drift cancels exactly).
    timeline.drift = 0.05
    result = run(tiny_models, paired_config(runs=4), with_baseline=True)
    assert result.summary.speedup == pytest.approx(2.0, rel=0.03)


def test_each_side_s_peak_memory_and_times_are_its_own_sessions(timeline, tiny_models):
    result = run(tiny_models, paired_config(runs=4), with_baseline=True)
    assert result.summary.peak_memory_bytes == PEAK_BYTES["speculative"]
    assert result.baseline.summary.peak_memory_bytes == PEAK_BYTES["baseline"]
    # The baseline loaded twice, the speculative side once.
    assert result.baseline.summary.load_seconds == pytest.approx(0.5)
    assert result.summary.load_seconds == pytest.approx(0.25)
    assert result.baseline.provenance.command == "llama-server --fake baseline"
    assert result.baseline.provenance.engine_log_tail == "log of session 1\nlog of session 3\n"


def test_the_margin_pass_runs_in_the_last_baseline_session_after_every_round(timeline, tiny_models):
    # The speculative side flips a token in the first round's request 0 and the second's 3.
    timeline.diverge_at = {0: 5, 3: 9}
    result = run(tiny_models, paired_config(runs=4), with_baseline=True)
    last = max(event[2] for event in timeline.events if event[0] == "start")
    passes = [index for index, event in enumerate(timeline.events) if event[0] == "top_two"]
    measured = [index for index, event in enumerate(timeline.events) if event[0] == "measure"]
    assert passes and {timeline.events[index][2] for index in passes} == {last}
    assert min(passes) > max(measured)
    assert [r.first_divergence for r in result.requests] == [5, None, None, 9]
    assert [r.divergence for r in result.requests] == ["mismatch", None, None, "mismatch"]


def test_progress_counts_every_request_of_every_session(timeline, tiny_models):
    events = []
    run(tiny_models, paired_config(runs=4), with_baseline=True, progress=events.append)
    sent = sum(event[0] == "measure" for event in timeline.events)
    assert sent == 3 + 5 + 3
    assert {event["total"] for event in events} == {sent}
    assert events[-1]["done"] == sent
    assert [event["done"] for event in events] == sorted(event["done"] for event in events)
    budget = protocols.token_budget(paired_config(runs=4), with_baseline=True)
    assert budget["requests"] == sent


def test_a_run_cancelled_between_rounds_loads_no_further_engine(timeline, tiny_models):
    def cancelled() -> bool:
        return any(event[0] == "stop" for event in timeline.events)

    with pytest.raises(BenchmarkCancelled):
        run(tiny_models, paired_config(runs=4), with_baseline=True, should_cancel=cancelled)
    assert session_order(timeline) == ["baseline"]


def test_an_unpaired_run_is_one_session_and_records_no_rounds(timeline, tiny_models):
    result = run(tiny_models, paired_config(runs=4))
    assert session_order(timeline) == ["speculative"]
    assert result.provenance.paired_rounds is None and result.baseline is None


def test_a_stored_result_s_rounds_must_name_every_request_once(timeline, tiny_models):
    data = run(tiny_models, paired_config(runs=4), with_baseline=True).model_dump(mode="json")
    assert load_result(data).provenance.paired_rounds is not None
    missing = data | {"provenance": data["provenance"] | {"paired_rounds": [
        data["provenance"]["paired_rounds"][0]]}}  # fmt: skip
    with pytest.raises(Exception, match="name every measured request once"):
        load_result(missing)
    one_side = dict(data["provenance"]["paired_rounds"][0], order=["baseline", "baseline"])
    twice = data | {"provenance": data["provenance"] | {"paired_rounds": [one_side]}}
    with pytest.raises(Exception, match="each side once"):
        load_result(twice)
    unpaired = data | {"baseline": None, "summary": data["summary"] | {
        "speedup": None, "lossless": None, "baseline_decode_tokens_per_second": None,
        "lossless_note": None, "fidelity": None}}  # fmt: skip
    with pytest.raises(Exception, match="without a baseline"):
        load_result(unpaired)
    older = data | {"provenance": {
        k: v for k, v in data["provenance"].items() if k != "paired_rounds"}}  # fmt: skip
    assert load_result(older).provenance.paired_rounds is None


# Several GPUs through a fake NVML -------------------------------------------------------------


class _TwoGpuSession:
    """A server split over two fake GPUs: each generated token costs GPU 0 3 mJ, GPU 1 1 mJ."""

    argv = ["llama-server"]
    command = "llama-server"
    pid = 4242
    load_seconds = 0.5

    def __init__(self, gpus) -> None:
        self.gpus = gpus

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def log_text(self) -> str:
        return ""

    def recent_log(self) -> str:
        return ""

    def measure(self, spec) -> dict:
        self.gpus[0].energy_millijoules += 3 * spec.output_tokens
        self.gpus[1].energy_millijoules += 1 * spec.output_tokens
        return {"wall_ms": 10.0, "predicted_n": spec.output_tokens, "prompt_n": 4}


def test_a_run_on_two_gpus_records_each_gpus_peak_and_measured_energy(monkeypatch, tiny_models):
    gpus = rtx_3090s(2)
    gpus[0].processes = [(4242, 12 * GIB)]
    gpus[1].processes = [(4242, 10 * GIB)]
    install(monkeypatch, FakeNvml(gpus))
    session = _TwoGpuSession(gpus)
    monkeypatch.setattr(benchmark, "open_session", lambda *args, **kwargs: session)
    config = parse_config(
        {"target_model": "tiny-qwen3.gguf", "protocol": {"name": "quick", "runs": 2, "warmup": 1}}
    )
    target = inspect_model(tiny_models["tiny-qwen3.gguf"])
    plan = plan_requests(config, vocab_size=target.vocab_size)
    measured = benchmark._run_one_config(
        config,
        engine=Engine(server_path="/x", release="b1", backend="cuda"),
        target=target,
        draft=None,
        plan=plan,
        progress=benchmark._Progress(len(plan), None),
        phase="measuring",
        should_cancel=None,
        request_timeout_s=5,
        start_timeout_s=5,
    )
    tokens = 2 * config.protocol.n_predict  # the two measured requests; the warm-up not counted
    assert measured.gpus == [
        {
            "index": 0,
            "peak_memory_bytes": 12 * GIB,
            "energy_joules": pytest.approx(3 * tokens / 1000),
        },
        {"index": 1, "peak_memory_bytes": 10 * GIB, "energy_joules": pytest.approx(tokens / 1000)},
    ]
    assert measured.peak_memory_bytes == 22 * GIB
    assert sum(gpu["energy_joules"] for gpu in measured.gpus) == pytest.approx(
        sum(record["energy_joules"] for record in measured.records)
    )


def fake_cuda_server(tmp_path) -> Engine:
    """A stand-in llama-server whose --help lists the multi-GPU flags (as b11434's does)."""
    binary = tmp_path / "llama-server"
    binary.write_text(
        "#!/bin/sh\necho '-h, --help  -sm, --split-mode  -ts, --tensor-split  -mg, --main-gpu'\n"
        "echo '--spec-draft-device, -devd, --device-draft'\n"
    )
    binary.chmod(0o755)
    return Engine(server_path=str(binary), release="b11434", backend="cuda")


def test_the_runner_refuses_a_split_over_gpus_the_host_does_not_show(
    monkeypatch, tmp_path, tiny_models
):
    engine = fake_cuda_server(tmp_path)
    target = inspect_model(tiny_models["tiny-qwen3.gguf"])
    config = parse_config({"target_model": "tiny-qwen3.gguf", "tensor_split": [1, 1]})
    install(monkeypatch, FakeNvml(rtx_3090s(1)))
    with pytest.raises(ConfigError, match=r"this host's GPUs \(RTX 3090 24GB\) cannot run it: "
                       r"tensor_split: the split gives proportions for 2 GPUs"):  # fmt: skip
        benchmark.check_gpu_placement(config, engine=engine, target=target, draft=None)
    install(monkeypatch, FakeNvml(rtx_3090s(2)))
    benchmark.check_gpu_placement(config, engine=engine, target=target, draft=None)
