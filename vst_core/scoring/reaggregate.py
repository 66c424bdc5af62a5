"""Re-aggregate stored evidence under other settings with no model: the metric with a
``reaggregate`` (GROOVIST, under another θ, penalty −P or weighting −C: every phrase's best cosine
and weight are in its record, and the matched image, box and temporal misalignment do not depend on
these settings)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from vst_core.config import Settings
from vst_core.contract import registry
from vst_core.records import StoryScores
from vst_core.signature import recorded_inputs, signature


def reaggregate(records: Sequence[StoryScores], base: Settings, wanted: Settings) -> list[StoryScores]:
    """Records scored under ``base`` as ``wanted`` would give them, when the two differ only in the
    settings the re-aggregated metric may change (GROOVIST's θ, penalty and weighting); each record
    then carries ``wanted``'s signature.

    Raises ValueError when ``wanted`` differs from ``base`` in anything a model would have to redo."""
    if wanted == base:
        return list(records)
    found = registry().reaggregated
    if found is None:
        raise ValueError("no setting can be changed without scoring again")
    name, again = found
    if base.with_(**{k: wanted.option(k) for k in again.settings}) != wanted:
        raise ValueError(f"only {again.what} can be changed without scoring again")
    why = again.refuse(base, wanted)
    if why is not None:
        raise ValueError(why)
    sig = signature(wanted, recorded_inputs(records))
    key = again.key(wanted)
    out = []
    for record in records:
        value = record.metrics.get(name)
        if value is not None:
            record = record.with_metric(name, again.record(value, key))
        out.append(replace(record, signature=sig))
    return out
