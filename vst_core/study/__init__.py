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

from vst_core.study.build import (
    DEFAULT_RATERS_PER_ITEM,
    GoldSpec,
    Sample,
    StudySource,
    aspects_from_json,
    gold_from_json,
    new_study,
    read_source,
    stories_from_list,
)
from vst_core.study.files import (
    STUDY_SUFFIX,
    add_rater,
    answers_path,
    find_study,
    load_study,
    new_token,
    rater_for,
    rater_link,
    revoke_rater,
    save_study,
    studies_folder,
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

__all__ = [
    "DEFAULT_RATERS_PER_ITEM",
    "LIKERT_ANCHORS",
    "PROTOCOLS",
    "STUDY_SUFFIX",
    "VIST_EDIT_ASPECTS",
    "Answer",
    "AnswerStore",
    "Aspect",
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
    "revoke_rater",
    "save_study",
    "stories_from_list",
    "studies_folder",
    "value_problem",
]
