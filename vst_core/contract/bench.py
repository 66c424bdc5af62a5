"""What a metric adds to ``vst bench`` (``spec.tools.bench``, a :class:`Bench`): its own phases, the
sizes they read (each a flag of the command), the shared runs it is scored in, and the random-weight
model those runs inject for it. The harness (:mod:`vst_core.bench.harness`) reads them from the
registry, so a metric's benchmark lives in its package (``metrics/<name>/bench.py``).

A phase is given the run (:class:`BenchRunLike`) and returns its figures, a JSON-able mapping whose
keys start with the phase's name; a figure in ``targets`` is then read against its target (met when
it is at least that)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from vst_core.contract.protocols import StorySetLike

#: A size's value: a count, seconds, a choice, or several counts (``1,8,32`` on the command line).
BenchValue = int | float | str | tuple[int, ...]
#: The runs of ``vst bench`` every metric may be scored in: the cold image runs (``grounding``: the
#: pipeline and stand-in phases, with the prep and warm ones), the rerun with every vector cached
#: (``warm``), the separate process whose peak memory is measured (``memory``) and ``vst score``
#: end to end (``e2e``).
SharedRun = Literal["grounding", "warm", "memory", "e2e"]
#: ``vst bench``'s own phases, in their order (each metric's run between ``text`` and ``rss``); no
#: metric's phase may be named like one.
BENCH_PHASES: tuple[str, ...] = ("raw", "ledger", "prep", "pipeline", "warm", "standin", "e2e", "text", "rss")
#: ``vst bench``'s own options (a test keeps them equal to the command's): no metric's size may take one.
BENCH_FLAGS: frozenset[str] = frozenset(
    {
        *("--arch", "--batch-sizes", "--clip-config", "--device", "--e2e-sequences", "--help", "--image-size"),
        *("--images-per-story", "--out", "--pipeline-runs", "--prep-images", "--prep-workers", "--preprocess"),
        *("--quiet", "--regions", "--rss-regions", "--rss-stories", "--seconds", "--skip", "--stand-in"),
        *("--stories", "--text-stories", "--warm-stories", "--workers"),
    }
)


class BenchConfigLike(Protocol):
    """The sizes of a run (:class:`vst_core.bench.run.BenchConfig`): the shared ones a phase may
    read, and each metric's own by name (:meth:`size`, its default where not given)."""

    @property
    def seed(self) -> int: ...
    @property
    def raw_seconds(self) -> float: ...
    @property
    def device(self) -> str: ...

    def size(self, name: str) -> Any: ...


class BenchRunLike(Protocol):
    """What a phase is given (:class:`vst_core.bench.run.BenchRun`): the sizes, the device the
    models run on, a temporary folder of its own, the synthetic story set, the progress log, and
    synthetic stories' sentences (``count`` stories, each sentence ``join`` template sentences) and
    every word they use (a tokenizer's vocabulary)."""

    @property
    def config(self) -> BenchConfigLike: ...
    @property
    def device(self) -> str: ...
    @property
    def folder(self) -> Path: ...
    @property
    def story_set(self) -> StorySetLike: ...

    def say(self, text: str) -> None: ...
    def sentences(self, count: int, join: int = 1) -> list[list[str]]: ...
    def words(self) -> tuple[str, ...]: ...


@dataclass(frozen=True)
class ReplicaRequest:
    """What a metric's random-weight model for the shared runs is built from: the run's sizes, a
    folder for its files, the device, the batch size, and every word of the synthetic stories (a
    tokenizer's vocabulary)."""

    config: BenchConfigLike
    folder: Path
    device: str
    batch_size: int
    words: tuple[str, ...]


@dataclass(frozen=True)
class BenchSize:
    """A size of a metric's phases: ``name`` (read by :meth:`BenchConfigLike.size`; its flag is
    ``--`` and the name with dashes), its ``default``, the ``help`` of its flag, the ``choices`` of a
    string, and the ``minimum`` of a number (of each number of several).

    >>> s = BenchSize("judge_server_concurrency", (1, 8, 32), "requests in flight to try")
    >>> s.flag, s.parse("1, 4"), s.shown
    ('--judge-server-concurrency', (1, 4), '1,8,32')
    >>> BenchSize("nr_stories", 5000, "stories").parse("0")
    Traceback (most recent call last):
    ValueError: --nr-stories must be at least 1, got 0
    >>> BenchSize("latency_ms", 50.0, "ms", minimum=0).parse("inf")
    Traceback (most recent call last):
    ValueError: --latency-ms takes a number, got 'inf'
    """

    name: str
    default: BenchValue
    help: str
    choices: tuple[str, ...] = ()
    minimum: float | None = 1

    @property
    def flag(self) -> str:
        """The option of ``vst bench`` that sets it."""
        return "--" + self.name.replace("_", "-")

    @property
    def shown(self) -> str:
        """The default as the command line writes it."""
        return ",".join(map(str, self.default)) if isinstance(self.default, tuple) else str(self.default)

    def parse(self, text: str) -> BenchValue:
        """The value of ``text`` given on the command line (ValueError naming the flag when it is not one)."""
        numbers: tuple[float, ...] = ()
        try:
            if isinstance(self.default, tuple):
                counts = tuple(int(v) for v in text.split(",") if v.strip())
                if not counts:
                    raise ValueError("empty")
                value: BenchValue = counts
                numbers = tuple(map(float, counts))
            elif isinstance(self.default, str):
                value = text
            else:
                number = type(self.default)(text)
                value, numbers = number, (number,)
        except ValueError:
            raise ValueError(f"{self.flag} takes {_kind_words(self.default)}, got {text!r}") from None
        if self.choices and value not in self.choices:
            raise ValueError(f"{self.flag} is one of {', '.join(self.choices)}, got {text!r}")
        if not all(math.isfinite(n) for n in numbers):
            raise ValueError(f"{self.flag} takes {_kind_words(self.default)}, got {text!r}")
        low = [n for n in numbers if self.minimum is not None and not n >= self.minimum]
        if low:
            raise ValueError(f"{self.flag} must be at least {self.minimum:g}, got {text}")
        return value


def _kind_words(default: BenchValue) -> str:
    if isinstance(default, tuple):
        return "comma-separated whole numbers"
    return {int: "a whole number", float: "a number"}.get(type(default), "a word")


@dataclass(frozen=True)
class BenchPhase:
    """One phase of ``vst bench``: its ``name`` (``--skip`` leaves it out), ``run`` (the run in,
    its figures out: a key that does not start with the name and ``_`` gets them in front),
    ``targets`` (its figure -> the least it should be) and ``figures``, what they are (``vst bench
    --help`` shows it)."""

    name: str
    run: Callable[[BenchRunLike], Mapping[str, Any]]
    targets: Mapping[str, float] = field(default_factory=dict)
    figures: str = ""


@dataclass(frozen=True)
class Bench:
    """A metric's part of ``vst bench``: its ``phases`` (run after the shared ones, in the registry's
    order), the ``sizes`` they read, the shared ``runs`` it is scored in, ``replica``, its
    random-weight model for the runs in this process (injected as ``Models(..., <name>=model)``; the
    ``e2e`` run is ``vst score`` in a new process, with the metric's own model), and ``about``, what
    the head of the summary says of that model (``{"coherence_arch": ...}``)."""

    phases: tuple[BenchPhase, ...] = ()
    sizes: tuple[BenchSize, ...] = ()
    runs: frozenset[SharedRun] = frozenset()
    replica: Callable[[ReplicaRequest], object] | None = None
    about: Callable[[BenchConfigLike], Mapping[str, Any]] | None = None


def rate(run: Callable[[], int], seconds: float) -> float:
    """Items/s of ``run`` (returning how many items it did), repeated for at least ``seconds``.

    >>> rate(lambda: 10, 0.0) > 0
    True
    """
    done, start = 0, time.perf_counter()
    while done == 0 or time.perf_counter() - start < seconds:
        done += run()
    return done / (time.perf_counter() - start)
