"""Which items each rater answers, in what order, with the stories in what order.

The deal: the study's items (gold items aside) in an order drawn from the study's seed; item ``j``
of that order goes to ``raters_per_item`` raters in turn, ``(j * k + t) mod n`` of the raters in
the order they were added (revoked ones kept in their place, so revoking a rater changes no other
rater's items). Every rater gets the same number of items, give or take one; with fewer raters
than ``raters_per_item`` each item goes to every rater. Gold items go to every rater.

A rater's plan: their items and the gold items in an order drawn from the study's seed and their
token, each item's stories in an order drawn the same way (the left story is a coin flip for a
pair), so two raters see different orders and one rater sees the same order on every visit.
"""

from __future__ import annotations

import random

from vst_core.hashing import text_digest
from vst_core.study.records import Item, Presented, Rater, Study, StudyError

__all__ = ["assigned", "deal", "plan_for"]


def _rng(*parts: object) -> random.Random:
    return random.Random(int(text_digest("\x1f".join(map(str, parts)), 16), 16))


_DEALS: dict[tuple[str, tuple[str, ...]], dict[str, tuple[str, ...]]] = {}


def deal(study: Study) -> dict[str, tuple[str, ...]]:
    """Rater name -> the ids of the (non-gold) items dealt to them, in the study's order."""
    key = (study.signature, tuple(r.name for r in study.raters))
    found = _DEALS.get(key)
    if found is None:
        if len(_DEALS) > 64:
            _DEALS.clear()
        found = _DEALS[key] = _deal(study)
    return found


def _deal(study: Study) -> dict[str, tuple[str, ...]]:
    raters = [r.name for r in study.raters]
    out: dict[str, list[str]] = {name: [] for name in raters}
    if not raters:
        return {}
    regular = [i.item_id for i in study.items if i.gold is None]
    order = list(regular)
    _rng("deal", study.seed, study.signature).shuffle(order)
    n, k = len(raters), min(study.raters_per_item, len(raters))
    for j, item_id in enumerate(order):
        for t in range(k):
            out[raters[(j * k + t) % n]].append(item_id)
    position = {item_id: p for p, item_id in enumerate(regular)}
    return {name: tuple(sorted(ids, key=position.__getitem__)) for name, ids in out.items()}


def assigned(study: Study, rater: Rater) -> tuple[Item, ...]:
    """The items ``rater`` answers: those dealt to them, then every gold item (study order)."""
    if study.rater(rater.name) is None:
        raise StudyError(f"{rater.name!r} is not a rater of study {study.study_id}")
    mine = set(deal(study).get(rater.name, ()))
    return tuple(i for i in study.items if i.item_id in mine or i.gold is not None)


def plan_for(study: Study, rater: Rater) -> list[Presented]:
    """What ``rater`` sees, step by step: deterministic per (study seed, rater token).

    >>> from vst_core.study import VIST_EDIT_ASPECTS, Item, Rater, StoryShown, Study
    >>> items = tuple(Item(f"i{n}", "s", (StoryShown("m", f"t{n}", ("A.",)),)) for n in range(4))
    >>> raters = (Rater("a", "a" * 24), Rater("b", "b" * 24))
    >>> study = Study("s", "T", "", "likert", VIST_EDIT_ASPECTS[:1], True, items, 2, raters, seed=1)
    >>> sorted(p.item_id for p in plan_for(study, study.raters[0]))
    ['i0', 'i1', 'i2', 'i3']
    """
    items = list(assigned(study, rater))
    rng = _rng("plan", study.seed, study.signature, rater.token)
    rng.shuffle(items)
    plan = []
    for position, item in enumerate(items):
        order = list(range(len(item.stories)))
        _rng("order", study.seed, rater.token, item.item_id).shuffle(order)
        plan.append(Presented(item.item_id, tuple(order), position))
    return plan
