"""Joining scores and judgements when a story is ``(system, story_id)``.

Released sets reuse story ids across systems (the dHM release: the human and the LLaVA story of a
sequence share an id), so the story id alone cannot join scores with ratings. When the scores
hold a shared id, every story is keyed ``"<story_id> (<system>)"`` (:func:`story_key`) on both
sides: a judgement row that names its system takes that key; one that names no system takes it
only when a single system has the id, else it is left out and said (which system did the raters
see?). With no shared id the key is the story id, as before.

>>> import pandas as pd
>>> scores = pd.DataFrame({"story": ["1", "1", "2"], "system": ["human", "llava", "human"]})
>>> keys_of(scores).tolist()
['1 (human)', '1 (llava)', '2 (human)']
"""

from __future__ import annotations

import pandas as pd

from vst_core.analysis.meta_eval.judgements import Judgements
from vst_core.analysis.meta_eval.ratings import StoryRating, aspect_ratings


def _escape(part: str) -> str:
    return part.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def story_key(story_id: str, system: str) -> str:
    """The meta-evaluation key of a story whose id another system shares: ``"<story_id> (<system>)"``
    with ``\\``, ``(`` and ``)`` escaped inside each part, so two different stories never share a key.

    >>> story_key("1", "human"), story_key("1", "a) (b") != story_key("1 (a)", "b")
    ('1 (human)', True)
    """
    return f"{_escape(story_id)} ({_escape(system)})"


def _join(ids: pd.Series, systems: pd.Series) -> pd.Series:
    """:func:`story_key` of each row (``ids``' index kept)."""
    joined = [story_key(str(i), str(y)) for i, y in zip(ids.tolist(), systems.tolist(), strict=True)]
    return pd.Series(joined, index=ids.index, dtype=object)


def shared_ids(scores: pd.DataFrame) -> bool:
    """Whether some story id of ``scores`` (columns story, system) belongs to several systems."""
    return bool(scores.drop_duplicates(["story", "system"])["story"].duplicated().any())


def keys_of(scores: pd.DataFrame) -> pd.Series:
    """The key of every row of ``scores``: the story id, or :func:`story_key` when ids are shared."""
    ids = scores["story"].astype(str)
    if not shared_ids(scores):
        return ids
    return _join(ids, scores["system"])


def keyed_judgements(judgements: Judgements, scores: pd.DataFrame) -> tuple[Judgements, list[str]]:
    """``judgements`` with story ids rewritten to the keys of ``scores`` (see the module), and a
    note for each kind of row left out. A row naming a system is never joined with another
    system's story: when its ``(system, story_id)`` is not scored but the id is, it is left out and
    said (e.g. ratings of the human and the model story 45530 with only the model's scores loaded)."""
    judgements, problems = _without_other_systems(judgements, scores)
    if not shared_ids(scores):
        return judgements, problems
    pairs_ = scores.drop_duplicates(["story", "system"])
    ids_all = pairs_["story"].astype(str)
    counts = ids_all.value_counts()
    single = pairs_[ids_all.map(counts).to_numpy() == 1]
    only_system = pd.Series(single["system"].astype(str).to_numpy(), index=single["story"].astype(str).to_numpy())
    shared = pd.Index(counts.index[counts > 1])
    known = set(keys_of(scores))
    scored_ids = set(ids_all)

    def rekey(frame: pd.DataFrame, what: str) -> pd.DataFrame:
        if frame.empty:
            return frame
        ids = frame["story_id"].astype(str)
        system = frame["system"] if "system" in frame else pd.Series(None, index=frame.index, dtype=object)
        named = (system.notna() & (system.astype(str) != "")).to_numpy()
        alone = ids.map(only_system)  # the one system of an id no other system has
        keys = ids.where(~ids.isin(shared) | named, None)
        keys = keys.where(~named, _join(ids, system.astype(str)))
        keys = keys.where(named | alone.isna(), _join(ids, alone.astype(object).fillna("").astype(str)))
        ambiguous = (~named) & ids.isin(shared).to_numpy()
        if ambiguous.any():
            problems.append(
                f"{int(ambiguous.sum())} {what} name a story id that several systems share and no system; left out "
                f"(e.g. {', '.join(ids[ambiguous].unique()[:3])}): add a system column to the judgements"
            )
        return frame.assign(story_id=keys)[~ambiguous]

    ratings = rekey(judgements.ratings, "rating rows")
    errors = rekey(judgements.errors, "error-label rows")
    pairs = judgements.pairs
    if len(pairs):
        mapped = {}
        for column in ("better", "worse"):
            values = pairs[column].astype(str)
            # a scored story id is read as that id, never as a key that happens to look like it
            mapped[column] = values.map(lambda v: _unique_key(v, only_system, shared) if v in scored_ids or v not in known else v)
        lost = mapped["better"].isna() | mapped["worse"].isna()
        if lost.any():
            problems.append(
                f"{int(lost.sum())} judged pair(s) name a story id that several systems share without its system; left out"
            )
        pairs = pairs.assign(better=mapped["better"], worse=mapped["worse"])[~lost]
    out = Judgements(ratings, errors, pairs, judgements.layout, [*judgements.problems], judgements.digest)
    return out, problems


def _without_other_systems(judgements: Judgements, scores: pd.DataFrame) -> tuple[Judgements, list[str]]:
    """The rows (ratings, error labels) that name a system other than the scored ones of their id, left out."""
    scored = pd.MultiIndex.from_arrays([scores["system"].astype(str), scores["story"].astype(str)])
    ids = pd.Index(scores["story"].astype(str).unique())
    problems: list[str] = []

    def keep(frame: pd.DataFrame, what: str) -> pd.DataFrame:
        if frame.empty or "system" not in frame:
            return frame
        system = frame["system"]
        named = system.notna() & (system.astype(str) != "")
        pairs = pd.MultiIndex.from_arrays([system.astype(str), frame["story_id"].astype(str)])
        other = named.to_numpy() & ~pairs.isin(scored) & frame["story_id"].astype(str).isin(ids).to_numpy()
        if other.any():
            problems.append(
                f"{int(other.sum())} {what} rate another system's story under a scored story id; left out "
                f"(e.g. {', '.join(sorted({f'{y} / {i}' for y, i in zip(system[other], frame['story_id'][other])})[:3])})"
            )
        return frame[~other]

    ratings, errors = keep(judgements.ratings, "rating rows"), keep(judgements.errors, "error-label rows")
    if not problems:
        return judgements, []
    return Judgements(ratings, errors, judgements.pairs, judgements.layout, [*judgements.problems], judgements.digest), problems


def _unique_key(story_id: str, only_system: pd.Series, shared: pd.Index) -> str | None:
    if story_id in shared:
        return None
    system = only_system.get(story_id)
    return story_id if system is None else story_key(story_id, str(system))  # unscored ids stay, counted as unmatched


def ratings_of(judgements: Judgements, story_id: str, system: str | None = None, *, shared: bool = False) -> list[StoryRating]:
    """The human ratings of one story per aspect (mean, population SD, N raters), in the file's
    aspect order; rows naming another system are not this story's, and when ``shared`` (several
    systems have this id) neither are rows naming no system."""
    rows = judgements.ratings[judgements.ratings["story_id"].astype(str) == story_id]
    if system is not None and "system" in rows:
        named = rows["system"].astype(str) == system
        rows = rows[named if shared else rows["system"].isna() | named]
    return aspect_ratings(judgements, rows)
