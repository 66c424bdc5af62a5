"""Stories are ``(system, story_id)``: keys built from the two never collide, whatever separators
the ids hold (meta-evaluation keys, VHED and VIST-Edit ids, training texts)."""

from __future__ import annotations

import pandas as pd
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from vst_core.analysis.meta_eval.identity import keyed_judgements, keys_of, story_key
from vst_core.analysis.meta_eval.judgements import Judgements
from vst_core.analysis.meta_eval.reader import read_judgements
from vst_core.analysis.meta_eval.released_layouts import joined_id, vhed_story_id

part = st.text(alphabet=st.sampled_from("1a:() \\b"), min_size=1, max_size=6)


@settings(max_examples=examples(300), deadline=None)
@given(a=st.tuples(part, part), b=st.tuples(part, part))
def test_joined_keys_are_injective(a: tuple[str, str], b: tuple[str, str]) -> None:
    if a != b:
        assert story_key(*a) != story_key(*b)
        assert joined_id(*a) != joined_id(*b)


def test_the_reported_collisions_are_two_keys() -> None:
    assert story_key("1", "a) (b") != story_key("1 (a)", "b")
    assert vhed_story_id("1:a", "b") != vhed_story_id("1", "a:b")
    assert (
        story_key("45530", "human") == "45530 (human)" and vhed_story_id("45530", "AREL") == "45530:AREL"
    )  # plain ids unchanged


def test_meta_evaluation_keeps_two_stories_whose_joined_names_read_alike() -> None:
    scores = pd.DataFrame({"story": ["1", "1 (a)", "1"], "system": ["a) (b", "b", "c"], "score": [0.1, 0.9, 0.5]})
    keys = keys_of(scores)
    assert keys.nunique() == 3
    ratings = pd.DataFrame(
        {
            "story_id": ["1", "1 (a)"],
            "rater": ["r", "r"],
            "aspect": ["overall", "overall"],
            "value": [1.0, 5.0],
            "system": ["a) (b", "b"],
        }
    )
    empty_errors = pd.DataFrame({"story_id": [], "rater": [], "error": [], "value": []})
    empty_pairs = pd.DataFrame({"sequence_id": [], "better": [], "worse": [], "gap": [], "agreement": []})
    keyed, _problems = keyed_judgements(Judgements(ratings, empty_errors, empty_pairs, "long", []), scores)
    joined = dict(zip(keyed.ratings["story_id"], keyed.ratings["value"], strict=True))
    assert joined == {keys.iloc[0]: 1.0, keys.iloc[1]: 5.0}


def test_vhed_pairs_of_ids_with_colons_stay_apart() -> None:
    raw = b"story_id,model_base,model_comp,avg_rank_base,avg_rank_comp\n1:a,b,c,1,2\n1,a:b,c,2,1\n"
    pairs = read_judgements(raw, layout="vhed").pairs
    stories = set(pairs["better"]) | set(pairs["worse"])
    assert len(stories) == 4 and vhed_story_id("1:a", "b") in stories and vhed_story_id("1", "a:b") in stories
