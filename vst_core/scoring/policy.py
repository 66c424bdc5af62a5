"""A run's policy, one for every front end (``vst score``, :func:`vst_core.api.score_stories` and the
dashboard all score through :func:`vst_core.scoring.runs.score_records`): what is settled before the
first story is scored, and what is said when the last one is.

* A metric whose model does not load is left out with its reason (:func:`skip_unloadable`): the
  other metrics are scored and each record names it in its ``errors`` (``not run: <reason>``),
  unless the run is ``strict``, has one metric, or no metric's model loads (then the first one's
  error is raised, before any work).
* θ ``dataset`` (GROOVIST's θ as the mean NP score over the whole set, never a shard) is computed
  next (:func:`theta_over_set`), and the run is signed with it.
* When the run ends each metric's ``summary`` hook says what it has to say (:func:`summaries`): its
  notes and its failures (a hook that fails is one failure).

All of it is kept in a :class:`RunReport`: the command line prints it, the Python API returns it
beside the records (:class:`ScoredStories`), the dashboard shows it as notices.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from vst_core.config import Settings
from vst_core.contract import registry
from vst_core.data import StorySet
from vst_core.models.hub import OptionWords, Phrased, cli_words
from vst_core.records import StoryScores
from vst_core.scoring.registry import Models, unloadable_metrics
from vst_core.scoring.story import dataset_theta


@dataclass(frozen=True)
class Said:
    """What a metric's ``summary`` hook said of a run: lines for the user (``notes``) and one line
    per kind of failed call (``failures``: any of them fails a strict run)."""

    metric: str
    notes: tuple[str, ...] = ()
    failures: tuple[str, ...] = ()


def worded(template: str, words: OptionWords = cli_words) -> str:
    """A reason that names settings as data (:func:`vst_core.models.hub.option`) in a front end's
    ``words``: the command line's flags by default.

    >>> from vst_core.models.hub import option, python_words
    >>> worded(f"pass {option('vrank_model', 'DIR')}"), worded(f"pass {option('vrank_model', 'DIR')}", python_words)
    ('pass --vrank-model DIR', 'pass Settings(vrank_model=DIR)')
    """
    return Phrased(template).phrased(words)


def template_of(error: BaseException) -> str:
    """The reason an error gives, its settings kept as data when it names them so
    (:class:`~vst_core.models.hub.Phrased`), so that each front end words them its own way."""
    return error.template if isinstance(error, Phrased) else str(error)


@dataclass
class RunReport:
    """What a run did besides its records: the metrics it scored (``metrics``), those it left out
    because their model does not load, each with its reason (``not_run``: settings named as data,
    worded by :meth:`reasons`), θ ``dataset`` and the number of noun phrases it is the mean of
    (``theta``), and what each metric's summary hook said (``said``).

    >>> from vst_core.models.hub import option, python_words
    >>> report = RunReport(("redundancy",), {"vrank": f"no model; pass {option('vrank_model', 'DIR')}"})
    >>> report.warnings()
    ['vrank is not run: no model; pass --vrank-model DIR']
    >>> report.reasons(python_words)
    {'vrank': 'no model; pass Settings(vrank_model=DIR)'}
    """

    metrics: tuple[str, ...] = ()
    not_run: dict[str, str] = field(default_factory=dict)
    theta: tuple[float, int] | None = None
    said: list[Said] = field(default_factory=list)

    def reasons(self, words: OptionWords = cli_words) -> dict[str, str]:
        """Why each metric left out is not run, in ``words`` (the command line's by default: the
        words its records' ``errors`` say it in, after ``not run:``)."""
        return {metric: worded(why, words) for metric, why in self.not_run.items()}

    def warnings(self, words: OptionWords = cli_words) -> list[str]:
        """One line per metric left out, as ``vst score`` says it: ``<metric> is not run: <reason>``."""
        return [f"{metric} is not run: {why}" for metric, why in self.reasons(words).items()]

    @property
    def notes(self) -> list[str]:
        """The notes of every metric's summary, in the order of the run's metrics."""
        return [line for said in self.said for line in said.notes]

    @property
    def failures(self) -> list[str]:
        """The failures of every metric's summary, in the order of the run's metrics."""
        return [line for said in self.said for line in said.failures]


class ScoredStories(list[StoryScores]):
    """The records of a run, one per story in input order (a list, as ever), with the run's
    :class:`RunReport` as :attr:`report`: the metrics not run and why, θ ``dataset``, the metrics'
    summaries.

    >>> scored = ScoredStories([], RunReport(("redundancy",)))
    >>> scored == [], scored.report.metrics
    (True, ('redundancy',))
    """

    def __init__(self, records: Iterable[StoryScores] = (), report: RunReport | None = None) -> None:
        super().__init__(records)
        self.report = report if report is not None else RunReport()


def with_models(settings: Settings, models: Models) -> Models:
    """Models for ``settings`` that reuse what ``models`` loaded (and the noun phrases it started
    parsing), so nothing loads twice when a run's settings change before it starts."""
    return Models(settings, cache_dir=models.cache_dir, **models.loaded()).taking_over(models)


def skip_unloadable(settings: Settings, models: Models, *, strict: bool = False) -> tuple[Settings, Models, dict[str, str]]:
    """The run's settings and models without the metrics whose model does not load, and why each
    is left out (its error's :func:`template_of`). Nothing is left out of a ``strict`` run or a run
    of one metric (its model's error comes when the models load, before any work), and none when no
    metric's model loads: the first one's error is raised. Only a :class:`ModelLoadError` leaves a
    metric out; anything else a loader raises (a setting's file that cannot be used) is raised.

    >>> settings = Settings(metrics=("redundancy", "vrank"), vrank_model="/nonexistent/vrank")
    >>> kept, _, why = skip_unloadable(settings, Models(settings))
    >>> kept.metrics, list(why)
    (('redundancy',), ['vrank'])
    """
    if strict or len(settings.metrics) < 2:
        return settings, models, {}
    found = unloadable_metrics(settings.metrics, models.load_metric, clip=lambda: models.clip).metrics
    if not found:
        return settings, models, {}
    if len(found) == len(settings.metrics):
        raise next(iter(found.values()))
    kept = settings.with_(metrics=tuple(m for m in settings.metrics if m not in found))
    return kept, with_models(kept, models), {metric: template_of(error) for metric, error in found.items()}


def theta_over_set(
    story_set: StorySet, settings: Settings, models: Models, chunk_size: int
) -> tuple[Settings, Models, tuple[float, int]]:
    """GROOVIST's θ as the mean NP score over the whole of ``story_set`` (every shard of a run
    agrees on it): the settings with it, models for them, and (θ, the number of noun phrases)."""
    theta, count = dataset_theta(story_set, models, chunk_size)
    settings = settings.with_(theta=repr(theta))
    return settings, with_models(settings, models), (theta, count)


def summaries(settings: Settings, models: Models) -> list[Said]:
    """What each metric of the run says of it when it ends (its spec's ``summary`` hook: the judge's
    calls and cache, RoViST-C's truncated pairs), in the order of the run's metrics; a hook that
    fails says so as one failure, and the run and its records stand."""
    specs = registry().specs
    found: list[Said] = []
    for name in settings.metrics:
        spec = specs.get(name)
        if spec is None or spec.computing.summary is None:
            continue
        try:
            notes, failures = spec.computing.summary(models)
        except Exception as exc:  # an installed metric's summary: the run and its records are done
            notes, failures = [], [f"{spec.title}: its run summary failed: {type(exc).__name__}: {exc}"]
        found.append(Said(name, tuple(notes), tuple(failures)))
    return found


__all__ = [
    "RunReport",
    "Said",
    "ScoredStories",
    "skip_unloadable",
    "summaries",
    "template_of",
    "theta_over_set",
    "with_models",
    "worded",
]
