"""Human-judgement studies run with the product: a study of stories (and their photos) built from
a story set or a scores file (:mod:`.build`), its records and signature (:mod:`.records`), its file
and its raters' tokens (:mod:`.files`), what each rater sees (:mod:`.plan`), the answers kept on
disk (:mod:`.store`), the agreement statistics (:mod:`.agreement`), what the researcher watches
(:mod:`.live`) and the exports the product reads back (:mod:`.export`). Never imports streamlit:
the study pages and ``vst study`` call these.

>>> from vst_core.data import Story
>>> stories = [Story(f"{q}-{m}", q, m, ("One.", "Two.")) for q in ("s1", "s2") for m in ("a", "b")]
>>> study = new_study(stories, raters=["ann", "bo", "cy"], seed=1)
>>> rater = rater_for(study, study.raters[0].token)
>>> rater.name, len(plan_for(study, rater)), rater_for(study, "../" + "x" * 30)
('ann', 4, None)
"""

from typing import TYPE_CHECKING, Any

from vst_core.study.build import (
    DEFAULT_RATERS_PER_ITEM,
    GoldSpec,
    Sample,
    StudySource,
    aspects_from_json,
    gold_from_json,
    new_study,
    read_source,
    read_sources,
    stories_from_list,
)
from vst_core.study.files import (
    STUDY_SUFFIX,
    add_rater,
    add_raters,
    answers_path,
    copy_photos,
    find_study,
    load_study,
    new_token,
    photos_folder,
    rater_for,
    rater_link,
    revoke,
    revoke_rater,
    save_study,
    studies_folder,
    study_photo,
)
from vst_core.study.plan import assigned, deal, plan_for
from vst_core.study.records import (
    LIKERT_ANCHORS,
    PROTOCOLS,
    VIST_EDIT_ASPECTS,
    Answer,
    Aspect,
    GoldAnswer,
    Item,
    Presented,
    Protocol,
    Rater,
    StoryShown,
    Study,
    StudyError,
    value_problem,
)
from vst_core.study.store import AnswerStore

if TYPE_CHECKING:
    from vst_core.study.agreement import agreeing_pairs, alpha_interval, fleiss_kappa, krippendorff_alpha
    from vst_core.study.export import export_study
    from vst_core.study.frames import judgements_frame, pairwise_frame
    from vst_core.study.live import GOLD_TOLERANCE, ExclusionRule, LiveView, correlation_grid, gold_correct, live_view

#: The names whose modules read numpy and pandas, imported when first asked for: the rater page
#: and a process that only records answers never pay for the statistics.
_LAZY = {
    "agreeing_pairs": "agreement",
    "alpha_interval": "agreement",
    "fleiss_kappa": "agreement",
    "krippendorff_alpha": "agreement",
    "export_study": "export",
    "judgements_frame": "frames",
    "pairwise_frame": "frames",
    "GOLD_TOLERANCE": "live",
    "ExclusionRule": "live",
    "LiveView": "live",
    "correlation_grid": "live",
    "gold_correct": "live",
    "live_view": "live",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(f"vst_core.study.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_RATERS_PER_ITEM",
    "GOLD_TOLERANCE",
    "LIKERT_ANCHORS",
    "PROTOCOLS",
    "STUDY_SUFFIX",
    "VIST_EDIT_ASPECTS",
    "Answer",
    "AnswerStore",
    "Aspect",
    "ExclusionRule",
    "LiveView",
    "GoldAnswer",
    "GoldSpec",
    "Item",
    "Presented",
    "Protocol",
    "Rater",
    "Sample",
    "StoryShown",
    "Study",
    "StudyError",
    "StudySource",
    "add_rater",
    "add_raters",
    "agreeing_pairs",
    "alpha_interval",
    "copy_photos",
    "correlation_grid",
    "export_study",
    "fleiss_kappa",
    "gold_correct",
    "judgements_frame",
    "krippendorff_alpha",
    "live_view",
    "pairwise_frame",
    "photos_folder",
    "revoke",
    "study_photo",
    "answers_path",
    "aspects_from_json",
    "assigned",
    "deal",
    "find_study",
    "gold_from_json",
    "load_study",
    "new_study",
    "new_token",
    "plan_for",
    "rater_for",
    "rater_link",
    "read_source",
    "read_sources",
    "revoke_rater",
    "save_study",
    "stories_from_list",
    "studies_folder",
    "value_problem",
]
