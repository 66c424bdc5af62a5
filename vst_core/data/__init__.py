"""Story data: types (:mod:`.types`), image paths (:mod:`.paths`), story-set readers (:mod:`.readers`),
browser uploads (:mod:`.uploads`) and the scores JSONL on disk (:mod:`.scores_io`).

Formats (see docs/data-formats.md):

* story set, JSON (a list of stories, ``{"stories": [...]}``, or ``{story_id: text}``) or JSONL
  (one story per line): ``story_id``, ``images`` (paths relative to the file's folder),
  ``sentences`` (one per image) or ``text``, ``system``, ``sequence_id``;
* VIST official ``sis``/``dii`` annotation JSON with an images folder named by photo id.
"""

from vst_core.data.paths import (
    IMAGE_SUFFIXES,
    ImagePathError,
    check_image,
    resolve_image,
)
from vst_core.data.readers import (
    read_jsonl_stories,
    read_story_set,
    read_vist,
    story_from_record,
    write_story_set,
)
from vst_core.data.scores_io import (
    ScoresWriter,
    load_records,
    read_score_lines,
    read_scores,
    scored_ids,
    story_of_record,
)
from vst_core.data.types import (
    Problem,
    ProblemKind,
    Severity,
    Splitter,
    Story,
    StorySet,
    StorySetError,
)
from vst_core.data.uploads import MAX_UPLOAD_IMAGES, story_set_from_upload

__all__ = [
    "IMAGE_SUFFIXES",
    "MAX_UPLOAD_IMAGES",
    "ImagePathError",
    "Problem",
    "ProblemKind",
    "ScoresWriter",
    "Severity",
    "Splitter",
    "Story",
    "StorySet",
    "StorySetError",
    "check_image",
    "read_jsonl_stories",
    "read_scores",
    "read_story_set",
    "read_vist",
    "resolve_image",
    "scored_ids",
    "load_records",
    "read_score_lines",
    "story_of_record",
    "story_from_record",
    "story_set_from_upload",
    "write_story_set",
]
