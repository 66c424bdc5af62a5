"""VWP as released (Hong et al. 2023): 5–10 film shots, a group of sentences per shot, named
characters; and stories written as groups (``[SEP]``/``[SENT]``, ``groups``). The files here are
generated in VWP's layout (its columns, as ``column_explain.csv`` names them); no row and no image
of the release is shipped (its frames are for academic use)."""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, examples
from hypothesis import example, given, settings
from hypothesis import strategies as st
from PIL import Image

from vst_core.cli import main
from vst_core.data import load_records, read_story_set
from vst_core.data.readers import grouped_sentences, story_object
from vst_core.data.types import Story
from vst_core.data.vwp import GROUP_MARK, is_vwp, split_groups

COLUMNS = [
    "index", "assignmentID", "writerId", "scene_full_id",
    *(f"link{k}" for k in range(10)),
    *(f"char{k}" for k in range(5)), *(f"char{k}_url" for k in range(5)),
    *(f"text{k}" for k in range(10)),
    "nums_used_imgs", "story", "sep_story",
]  # fmt: skip

SERVER = "https://example.org/vwp/images"


def vwp_row(scene: str, assignment: str, groups: list[str], characters: list[str], shots: int | None = None) -> dict[str, str]:
    """One row in VWP's layout: ``shots`` links (default: one per group), the groups in ``text*``."""
    shots = len(groups) if shots is None else shots
    row = dict.fromkeys(COLUMNS, "")
    row.update({"index": assignment, "assignmentID": assignment, "writerId": "w1", "scene_full_id": scene})
    for k in range(shots):
        row[f"link{k}"] = f"{SERVER}/{scene}/{scene}_{k}.jpg"
    for k, name in enumerate(characters):
        row[f"char{k}"] = name
        row[f"char{k}_url"] = f"{SERVER}/{scene}/char_{k}.jpg"
    for k, text in enumerate(groups):
        row[f"text{k}"] = text
    row["story"] = " ".join(groups)
    row["sep_story"] = " [SEP] ".join(groups)
    row["nums_used_imgs"] = str(shots)
    return row


def write_images(folder: Path, rows: list[dict[str, str]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for row in rows:
        for k in range(10):
            link = row[f"link{k}"]
            if link:
                Image.new("RGB", (32, 24), (k * 20, 100, 150)).save(folder / link.rsplit("/", 1)[1])


ROWS = [
    vwp_row(
        "tt001_0001",
        "A1",
        [
            "Ann walks into the bar. She looks around.",
            "Bob waves at her.",
            "They sit down together. Ann orders a drink.",
            "The barman pours it.",
            "Ann smiles at Bob.",
            "Bob tells a story. Ann laughs. The night goes on.",
            "They leave together.",
        ],
        ["Ann", "Bob"],
    ),
    vwp_row("tt002_0005", "A2", [f"Shot {k} shows the ship." for k in range(10)], ["Captain"]),
    vwp_row("tt002_0005", "A3", ["Only two.", "Groups here."], [], shots=5),  # fewer groups than shots
]


def write_csv(folder: Path, rows: list[dict[str, str]] = ROWS) -> Path:
    path = write_rows_csv(folder, rows, "vwp_v2.1_test.csv")
    write_images(folder / "images", rows)
    return path


def test_the_release_csv_reads_as_stories_in_groups(tmp_path: Path) -> None:
    stories = read_story_set(write_csv(tmp_path))
    assert [s.story_id for s in stories] == ["A1", "A2", "A3"]
    first = stories.get("A1", "human")
    assert first.sequence_id == "tt001_0001" and len(first.images) == 7
    assert first.images[0] == "images/tt001_0001_0.jpg" and first.images_ok
    assert len(first.sentences) == 11 and first.frames[:3] == (0, 0, 1) and max(first.frames) == 6
    assert first.frame_texts[0] == "Ann walks into the bar. She looks around." and len(first.frame_texts) == 7
    assert first.characters == (("Ann", "char_0.jpg"), ("Bob", "char_1.jpg"))
    ten = stories.get("A2", "human")
    assert len(ten.images) == 10 and len(ten.frame_texts) == 10
    (crop,) = ten.problems  # the shots are there, the crop is not: said, as a warning
    assert crop.severity == "warning" and "'Captain''s crop: image not found" in crop.message
    short = stories.get("A3", "human")
    assert [p.kind for p in short.problems] == ["alignment"] and short.problems[0].severity == "warning"
    assert "2 sentence groups for 5 images: the last 3 have no text" in short.problems[0].message


def test_json_and_parquet_exports_read_the_same(tmp_path: Path) -> None:
    import pandas as pd

    csv_path = write_csv(tmp_path)
    want = [(s.key, s.sentences, s.frames, s.images, s.characters) for s in read_story_set(csv_path)]
    (tmp_path / "rows.json").write_text(json.dumps(ROWS))
    (tmp_path / "rows.jsonl").write_text("\n".join(json.dumps(r) for r in ROWS) + "\n")
    pd.DataFrame(ROWS).to_parquet(tmp_path / "rows.parquet")
    for name in ("rows.json", "rows.jsonl", "rows.parquet"):
        got = [(s.key, s.sentences, s.frames, s.images, s.characters) for s in read_story_set(tmp_path / name)]
        assert got == want, name


def test_a_vwp_table_over_the_table_budget_is_refused_saying_which(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A VWP CSV or Parquet file is read within the tables' row budget (VST_MAX_TABLE_ROWS): one
    row too many is refused with the budget's words, before a story is built."""
    import pandas as pd

    from vst_core.data.types import StorySetError

    write_csv(tmp_path)
    pd.DataFrame(ROWS).to_parquet(tmp_path / "rows.parquet")
    monkeypatch.setenv("VST_MAX_TABLE_ROWS", str(len(ROWS) - 1))
    for name in ("vwp_v2.1_test.csv", "rows.parquet"):
        with pytest.raises(StorySetError, match="VST_MAX_TABLE_ROWS"):
            read_story_set(tmp_path / name)
    monkeypatch.setenv("VST_MAX_TABLE_ROWS", str(len(ROWS)))
    assert len(list(read_story_set(tmp_path / "rows.parquet"))) == len(ROWS)


def test_sep_story_is_read_when_the_text_columns_are_absent(tmp_path: Path) -> None:
    rows = [{k: v for k, v in row.items() if not k.startswith("text")} for row in ROWS[:1]]
    (tmp_path / "sep.json").write_text(json.dumps(rows))
    write_images(tmp_path / "images", rows)
    (story,) = read_story_set(tmp_path / "sep.json")
    assert story.frame_texts == read_story_set(write_csv(tmp_path)).get("A1", "human").frame_texts


def test_markers_split_groups_and_are_never_words(tmp_path: Path) -> None:
    """A ``{story_id: text}`` file of a VLM's outputs with ``[SENT]`` between shots: the markers
    are separators, not words (RoViST-NR counted ``[sent]`` as a repeated word in every story)."""
    texts = {"q1": "A man runs. He is fast. [SENT] The man stops. [sent] He rests [SEP] Night falls."}
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(texts))
    (story,) = read_story_set(path)
    assert story.sentences == ("A man runs.", "He is fast.", "The man stops.", "He rests", "Night falls.")
    assert story.frames == (0, 0, 1, 2, 3)
    out = tmp_path / "nr.jsonl"
    assert main(["score", str(path), "--out", str(out), "--metrics", "redundancy", "--system", "vlm", "--no-progress"]) == 0
    (record,), _ = load_records(out)
    assert record.frames == story.frames and record.sentences == story.sentences
    assert not any("[" in s or "sent" in s.lower() for s in record.sentences)  # NR reads these: no marker among its words


def test_nr_reads_the_sentences_not_the_groups(tmp_path: Path) -> None:
    """The same words as sentences in groups and as one 'sentence' per shot give different NR:
    the grouped story's NR is that of its real sentences."""
    grouped = Story(
        "g", "q", "m", ("The dog runs in the park.", "The dog runs in the park again.", "A cat sleeps."), frames=(0, 0, 1)
    )
    real = Story("r", "q", "m", grouped.sentences)
    per_shot = Story("p", "q", "m", grouped.frame_texts)  # what a converter without groups had to write
    out = tmp_path / "stories.jsonl"
    out.write_text("\n".join(json.dumps(story_object(s)) for s in (grouped, real, per_shot)) + "\n")
    assert json.loads(out.read_text().splitlines()[0])["groups"] == [list(grouped.sentences[:2]), ["A cat sleeps."]]
    scores = tmp_path / "nr.jsonl"
    assert main(["score", str(out), "--out", str(scores), "--metrics", "redundancy", "--no-progress"]) == 0
    records = {r.story_id: r for r in load_records(scores)[0]}
    assert records["g"].metrics["redundancy"].score == records["r"].metrics["redundancy"].score  # type: ignore[attr-defined]
    assert records["g"].metrics["redundancy"].score != records["p"].metrics["redundancy"].score  # type: ignore[attr-defined]
    assert records["g"].frames == (0, 0, 1) and records["r"].frames == ()


def test_more_groups_than_images_is_an_error_on_the_story(tmp_path: Path) -> None:
    rows = [vwp_row("tt003_0001", "A9", ["One.", "Two.", "Three.", "Four.", "Five.", "Six."], [], shots=5)]
    (story,) = read_story_set(write_csv(tmp_path, rows))
    (problem,) = story.problems
    assert problem.kind == "alignment" and problem.severity == "error" and "6 sentence groups but 5 images" in problem.message


def test_a_table_that_is_not_vwp_is_refused_with_what_it_needs(tmp_path: Path) -> None:
    from vst_core.data.types import StorySetError

    path = tmp_path / "other.csv"
    path.write_text("story_id,text\n1,hello\n")
    with pytest.raises(StorySetError, match="scene_full_id, link0"):
        read_story_set(path)
    assert is_vwp(COLUMNS)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.just(""), st.lists(st.sampled_from(["A dog runs.", "It barks.", "[x] ok.", "Ann, Bob."]), min_size=1, max_size=3)
        ),
        min_size=1,
        max_size=10,
    )
)
def test_groups_keep_every_sentence_and_its_shot(groups: list[list[str] | str]) -> None:
    sentences, frames = grouped_sentences(groups)
    assert len(sentences) == len(frames) and list(frames) == sorted(frames)
    for k, group in enumerate(groups):
        mine = [s for s, f in zip(sentences, frames, strict=True) if f == k]
        assert mine == ([s.strip() for s in group if s.strip()] if isinstance(group, list) else [])


@pytest.mark.slow  # builds the tiny CLIP
def test_grounding_keeps_the_shot_alignment(tmp_path: Path, tiny_clip: tuple[Path, Path]) -> None:
    """GROOVIST, T and CLIPScore on VWP stories: CLIPScore pairs each shot with its group (7 and
    10 shots), T is over the groups, and a story with fewer groups than shots is scored on the
    pairs it has and says so."""
    from conftest import clip_args

    out = tmp_path / "scores.jsonl"
    code = main(
        [
            "score",
            str(write_csv(tmp_path)),
            "--out",
            str(out),
            "--metrics",
            "grounding,clipscore",
            "--device",
            "cpu",
            "--no-progress",
            *clip_args(tiny_clip),
        ]
    )
    assert code == 0
    records = {r.story_id: r for r in load_records(out)[0]}
    seven, ten, short = records["A1"], records["A2"], records["A3"]
    assert len(seven.metrics["clipscore"].pairs) == 7 and len(ten.metrics["clipscore"].pairs) == 10  # type: ignore[attr-defined]
    assert seven.metrics["grounding"].temporal_misalignment is not None  # type: ignore[attr-defined]
    assert len(seven.metrics["grounding"].misalignment_per_sentence) == 7  # type: ignore[attr-defined]  # one per group
    assert any("T per image group: 11 sentences in 7 groups" in n for n in seven.metrics["grounding"].notes)  # type: ignore[attr-defined]
    assert len(short.metrics["clipscore"].pairs) == 2 and any(
        "2 sentence groups, 5 images" in n for n in short.metrics["clipscore"].notes
    )  # type: ignore[attr-defined]
    assert any("2 sentence groups for 5 images" in w for w in short.warnings)


def test_the_story_view_marks_each_image_group() -> None:
    """Inspect, the report and ``vst.show`` open each group with its image's number."""
    from vst_core.viz.story import story_html

    html = story_html(("Ann waves.", "Bob smiles.", "They leave."), None, frames=(0, 0, 2))
    assert html.count('class="vst-frame"') == 2 and "[image 1]" in html and "[image 3]" in html and "[image 2]" not in html
    assert 'class="vst-frame"' not in story_html(("One.", "Two."), None)  # no groups: nothing added


def test_a_vwp_table_uploaded_with_its_shots_reads_with_its_images(tmp_path: Path) -> None:
    """The dashboard's "Upload a story file": VWP's CSV chosen with the shot files it names."""
    from vst_core.data.uploads import story_set_from_files

    source = tmp_path / "src"
    source.mkdir()
    csv_path = write_csv(source)
    files = [(csv_path.name, csv_path.read_bytes())] + [(p.name, p.read_bytes()) for p in sorted((source / "images").iterdir())]
    found, error, messages = story_set_from_files(files, tmp_path / "upload")
    assert error is None and found is not None, (error, messages)
    first = found.get("A1", "human")
    assert len(first.images) == 7 and first.images_ok and first.frames and first.characters


@pytest.mark.slow  # seconds on 2 cores: kept out of the fast tier
@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=400), st.sampled_from([".csv", ".tsv", ".parquet"]), st.integers(0, 3000))
@example(b"[", ".csv", 302)  # a link cut after its host's "[": urlparse raised "Invalid IPv6 URL"
def test_a_damaged_table_is_refused_whole_never_raised_otherwise(noise: bytes, suffix: str, cut: int) -> None:
    """Random bytes, or the release's CSV cut anywhere and followed by them: the file reads, or is
    refused with a StorySetError saying why (a parser's own exception used to escape)."""
    import tempfile

    from vst_core.data.types import StorySetError

    with tempfile.TemporaryDirectory() as folder:
        good = write_csv(Path(folder)).read_bytes()
        for k, data in enumerate((noise, good[:cut] + noise)):
            path = Path(folder) / f"t{k}{suffix}"
            path.write_bytes(data)
            try:
                read_story_set(path, check_images=False)
            except StorySetError:
                pass


# ------------------------------------------------------------------ groups split in linear time

#: The split as the reader once wrote it: ``\s*`` on each side of the mark tried every start in a
#: run of spaces (40,000 spaces took 4–8 s, a megabyte about an hour).
SPACED = re.compile(r"\s*\[(?:SEP|SENT)\]\s*", re.IGNORECASE)
HOSTILE_PIECES = st.sampled_from(
    [" ", "\t", "\n", "\r\n", "\u2028", "\xa0", "\u3000", "\x1c", "\x85", "[SEP]", "[sent]", "[SeNt]", "[\u017fep]"]
    + ["[SEP", "[SE", "[", "]", "SEP]", "a", "Ann waves.", "\u017f"]
)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.tuples(HOSTILE_PIECES, st.integers(1, 60)), max_size=24))
def test_groups_split_as_the_spaced_pattern_did_on_hostile_texts(runs: list[tuple[str, int]]) -> None:
    """Runs of spaces, of marks (whole and cut), of newlines and other Unicode spaces, mixed: the
    groups are exactly what the old pattern's split gave."""
    text = "".join(piece * n for piece, n in runs)
    assert split_groups(text) == SPACED.split(text)


def test_a_mark_is_at_most_six_characters_so_a_split_looks_at_each_character_a_bounded_number_of_times() -> None:
    """The mark pattern repeats nothing (its widest match is ``[SENT]``): every start is tried
    against at most six characters, and the trimming around the marks reads each character once.
    The old pattern's widest match was unbounded (``\\s*``), hence its quadratic time."""
    parsed = re._parser.parse(GROUP_MARK.pattern, GROUP_MARK.flags)  # type: ignore[attr-defined]
    assert parsed.getwidth() == (5, 6)
    assert re._parser.parse(SPACED.pattern, SPACED.flags).getwidth()[1] > 10**9  # type: ignore[attr-defined]


LINEAR_CHECK = """
import time
from pathlib import Path
from vst_core.data.readers import story_from_record
from vst_core.data.vwp import vwp_groups
units = {"spaces": " ", "newlines": "\\n", "mixed spaces": " \\t\\n\\u2028\\xa0", "cut marks": " [SE", "brackets": "[",
         "marks": " [SEP] ", "marks and newlines": "\\n[sent]\\n\\n"}
for size in (200_000, 1_000_000):
    for name, unit in units.items():
        text = (unit * (size // len(unit) + 1))[:size]
        start = time.perf_counter()
        vwp_groups({"sep_story": text}, 0)
        story_from_record({"story_id": "s", "text": text}, root=Path("."), splitter=lambda t: [t], check_images=False)
        print(f"{size:>9,} characters of {name}: {time.perf_counter() - start:.3f} s", flush=True)
"""


@pytest.mark.slow  # a new interpreter (about a second); the fast tier keeps the pattern's width check above
def test_long_runs_of_spaces_marks_and_newlines_are_grouped_in_linear_time() -> None:
    """200 KB and 1 MB of each hostile run through a VWP row's ``sep_story`` and a story's
    ``text``, in a new interpreter given 20 s for all of them (the old pattern took minutes on
    200,000 spaces alone). The times are printed (``-s``), not compared."""
    try:
        run = subprocess.run([sys.executable, "-c", LINEAR_CHECK], capture_output=True, text=True, timeout=20, cwd=ROOT)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(
            f"not done in 20 s; finished: {(exc.stdout or b'').decode() if isinstance(exc.stdout, bytes) else exc.stdout}"
        )
    assert run.returncode == 0, run.stderr[-2000:]
    print(run.stdout)
    assert run.stdout.count("characters of") == 14


# ------------------------------------------------------------------ shots and crops by scene


def _scene_rows() -> list[dict[str, str]]:
    """Two scenes whose shot 2 has the same file name (VWP's names are per scene:
    ``shot_0716_img_2.jpg`` is a shot of two different films in NCS's 60-story sample)."""
    rows = [
        vwp_row("tt0047396_0012_0", "B1", ["Ann sits.", "Ann reads."], ["Ann"]),
        vwp_row("tt0109686_0003_6", "B2", ["Bob runs.", "Bob stops."], ["Bob"]),
    ]
    for row in rows:
        row["link1"] = f"{SERVER}/{row['scene_full_id']}/shot_0716_img_2.jpg"
    return rows


def _write_scene_rows(folder: Path, rows: list[dict[str, str]], *, by_scene: bool) -> Path:
    """The rows' shots and crops: in ``images/<scene>/`` or all in ``images/`` (the last row's
    file wins a shared name), each image a colour of its row."""
    for n, row in enumerate(rows):
        target = folder / "images" / (row["scene_full_id"] if by_scene else "")
        target.mkdir(parents=True, exist_ok=True)
        for link in [row[f"link{k}"] for k in range(10)] + [row[f"char{k}_url"] for k in range(5)]:
            if link:
                Image.new("RGB", (24, 16), (n * 120, 40, 90)).save(target / link.rsplit("/", 1)[1])
    return write_rows_csv(folder, rows)


def write_rows_csv(folder: Path, rows: list[dict[str, str]], name: str = "vwp.csv") -> Path:
    """``rows`` as a VWP CSV named ``name`` in ``folder`` (no images)."""
    path = folder / name
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return path


def test_a_shot_name_two_scenes_share_is_said_and_scene_folders_tell_them_apart(tmp_path: Path) -> None:
    """In a flat folder, ``shot_0716_img_2.jpg`` (and ``char_0.jpg``) is one scene's file: each
    story that gets it says so, naming both scenes. In ``images/<scene>/`` each story gets its own
    scene's file and nothing is said."""
    stories = read_story_set(_write_scene_rows(tmp_path / "flat", _scene_rows(), by_scene=False))
    for story in stories:
        (shot,) = [p for p in story.problems if "shot_0716_img_2.jpg" in p.message]
        assert shot.severity == "warning" and shot.kind == "image" and shot.message.startswith("shot 2:")
        assert "tt0047396_0012_0" in shot.message and "tt0109686_0003_6" in shot.message
        assert any("char_0.jpg" in p.message for p in story.problems)  # the crops' names are shared too
        assert story.images[0] == f"images/{story.sequence_id}_0.jpg"  # a name of its own: nothing said
    stories = read_story_set(_write_scene_rows(tmp_path / "scenes", _scene_rows(), by_scene=True))
    assert not stories.all_problems()
    for n, story in enumerate(stories):
        assert story.images[1] == f"images/{story.sequence_id}/shot_0716_img_2.jpg" and story.characters[0][1] == "char_0.jpg"
        with Image.open(tmp_path / "scenes" / story.images[1]) as im:
            assert im.getpixel((0, 0))[0] == n * 120  # its own scene's photo


# ------------------------------------------------------------------ rows as released, and as damaged


def test_a_vwp_jsonl_reads_past_a_bad_line_and_keeps_a_u2028_inside_a_text(tmp_path: Path) -> None:
    rows = [dict(row) for row in ROWS]
    rows[0]["text1"] = "Bob waves\u2028at her."
    lines = [
        json.dumps(rows[0], ensure_ascii=False),
        '{"scene_full_id": "tt9", "link0": ',
        json.dumps(rows[1]),
        json.dumps(rows[2]),
    ]
    (tmp_path / "rows.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    write_images(tmp_path / "images", rows)
    stories = read_story_set(tmp_path / "rows.jsonl")
    assert [s.story_id for s in stories] == ["A1", "A2", "A3"]
    assert "\u2028" in stories.get("A1", "human").frame_texts[1]
    (problem,) = stories.problems
    assert problem.line == 2 and "malformed JSON" in problem.message and "line skipped" in problem.message


def test_a_vwp_json_list_with_rows_that_are_not_objects_reads_the_others(tmp_path: Path) -> None:
    (tmp_path / "rows.json").write_text(json.dumps([ROWS[0], 42, ["x"], ROWS[1]]))
    write_images(tmp_path / "images", ROWS)
    stories = read_story_set(tmp_path / "rows.json")
    assert [s.story_id for s in stories] == ["A1", "A2"]
    assert [(p.line, p.message) for p in stories.problems] == [
        (2, "row 2 is a int, not an object; skipped"),
        (3, "row 3 is a list, not an object; skipped"),
    ]


def test_a_repeated_id_keeps_its_first_row_and_never_takes_a_real_id(tmp_path: Path) -> None:
    """Rows A0, A0, A0#2: the first keeps A0, the real A0#2 keeps its id, the second A0 becomes
    A0#3 with a warning naming both rows (it used to take A0#2, and the real one became A0#2#2)."""
    rows = [vwp_row("tt1_0001", sid, ["One.", "Two."], []) for sid in ("A0", "A0", "A0#2")]
    for row in rows:
        row["story_id"] = row.pop("index")
    path = tmp_path / "rows.json"
    path.write_text(json.dumps(rows))
    stories = read_story_set(path, check_images=False)
    assert [s.story_id for s in stories] == ["A0", "A0#3", "A0#2"]
    (warning,) = stories.problems
    assert warning.severity == "warning" and warning.kind == "id" and warning.line == 2 and warning.story_id == "A0#3"
    assert warning.message == "story_id 'A0' is row 1's too: this row's story is read as 'A0#3'"


def test_cells_that_would_change_shape_are_said_or_read_as_they_are(tmp_path: Path) -> None:
    """Columns the reader leaves out: one note naming them. A column the header gives twice: a
    problem (the first is read). A row's own ``images`` as Parquet list cells: read as a list."""
    rows = [dict(ROWS[0], mood="calm", **{"Unnamed: 0": "0"})]
    path = tmp_path / "extra.json"
    path.write_text(json.dumps(rows))
    write_images(tmp_path / "images", ROWS)
    (note,) = read_story_set(path).problems
    assert note.severity == "warning" and note.message == "2 columns not read: 'mood', 'Unnamed: 0'"

    header = ",".join([*COLUMNS, "text0"])
    values = ",".join(f'"{ROWS[0][c]}"' for c in COLUMNS) + ',"A second first group."'
    (tmp_path / "twice.csv").write_text(header + "\n" + values + "\n")
    stories = read_story_set(tmp_path / "twice.csv")
    (problem,) = stories.problems
    assert problem.severity == "error" and "'text0' is in the header 2 times: the first is read" in problem.message
    assert stories.stories[0].frame_texts[0] == ROWS[0]["text0"]

    import pandas as pd

    listed = dict(ROWS[1], images=[f"images/{ROWS[1]['scene_full_id']}_{k}.jpg" for k in (9, 8)])
    pd.DataFrame([listed]).to_parquet(tmp_path / "lists.parquet")
    (story,) = read_story_set(tmp_path / "lists.parquet")
    assert story.images == tuple(listed["images"]) and story.images_ok


def test_a_10_mb_character_name_and_a_10_mb_id_are_left_out_with_the_reason(tmp_path: Path) -> None:
    """A name is matched against every sentence (10 MB took 101 s and 2.4 GB): over 200
    characters it is left out with a warning, the story kept; an id over 1,000 costs its row."""
    rows = [dict(ROWS[0], char1="x" * 10_000_000), dict(ROWS[1], assignmentID="y" * 10_000_000, index="")]
    path = tmp_path / "long.json"
    path.write_text(json.dumps(rows))
    write_images(tmp_path / "images", ROWS)
    stories = read_story_set(path)
    (story,) = stories
    assert story.characters == (("Ann", "char_0.jpg"),)
    (name,) = [p for p in story.problems if "characters long" in p.message]
    assert name.severity == "warning" and "10,000,000 characters long (at most 200 are read)" in name.message
    (row,) = stories.problems
    assert row.line == 2 and "assignmentID is 10,000,000 characters long (at most 1,000 are read); skipped" in row.message
