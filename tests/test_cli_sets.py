"""Story sets built with the command line, in the dHM release's layouts: two systems' {story_id: text}
files with shared ids scored into one --out, their released G/C (and R) scores imported, dHM over
every file: identity (system, story_id), resume, conflicts, reasons for what is left out."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from vst_core.cli import main
from vst_core.data import load_records, read_scores

HUMAN = {
    "45530": "The family went to the beach. The kids built a sand castle. Then the sun went down over the water.",
    "45531": "We visited the old museum. The paintings were huge. We had lunch in the garden after the tour.",
    "45532": "It was a rainy day in the city. People carried umbrellas. The streets were shining at night.",
}
LLAVA = {
    "45530": "A family is at the beach. A family is at the beach with kids. The sun is setting over the beach.",
    "45531": "People are in a museum. People look at paintings in a museum. People eat lunch in a garden.",
    "45532": "A city street in the rain. A city street with people and umbrellas. A city street at night.",
    "45533": "A story with no human counterpart. It has two sentences.",
}
# released G ({story_id: GROOVIST before tanh}; "" is how the release marks a story it could not score)
G = {"reference": {"45530": 0.9, "45531": 0.4, "45532": ""}, "llava": {"45530": 0.2, "45531": 0.5, "45532": 0.1, "45533": 0.3}}
C = {"reference": {"45530": 0.99, "45531": 0.95, "45532": 0.9}, "llava": {"45530": 0.8, "45531": 0.7, "45532": 0.6, "45533": 0.5}}
FILES = {"reference": "gt_test", "llava": "llava_vc_p3"}


def run(*args: str) -> int:
    return main(list(args))


def release(folder: Path) -> Path:
    """The release's files for two systems with shared ids, in its exact layouts."""
    for system, stories in (("reference", HUMAN), ("llava", LLAVA)):
        name = FILES[system]
        (folder / f"{name}.json").write_text(json.dumps(stories, indent=4), encoding="utf-8")
        (folder / f"{name}_G.json").write_text(json.dumps(G[system], indent=4), encoding="utf-8")
        rows = "".join(f"{sid},{value}\n" for sid, value in C[system].items())
        (folder / f"{name}_C.csv").write_text("story_id,C_score\n" + rows, encoding="utf-8")
    return folder


def score(folder: Path, system: str, out: Path, *extra: str) -> int:
    return run(
        "score",
        str(folder / f"{FILES[system]}.json"),
        "--system",
        system,
        "--out",
        str(out),
        "--metrics",
        "redundancy",
        "--nr-variant",
        "reference",
        "--no-progress",
        *extra,
    )


def imported(folder: Path) -> Path:
    out = folder / "imported.jsonl"
    for system, name in FILES.items():
        files = [str(folder / f"{name}_G.json"), str(folder / f"{name}_C.csv")]
        assert run("import-scores", *files, "--system", system, "--out", str(out), "--sequence-id-from", "story_id") == 0
    return out


def test_two_systems_share_one_out_and_resume_skips_by_system_and_story(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = release(tmp_path)
    out = tmp_path / "scores.jsonl"
    assert score(folder, "reference", out, "--sequence-id-from", "story_id") == 0
    assert score(folder, "llava", out, "--sequence-id-from", "story_id") == 0  # same ids, another file: appended
    records, problems = read_scores(out)
    assert problems == [] and len(records) == 7
    assert {(r["system"], r["story_id"]) for r in records} == {("reference", s) for s in HUMAN} | {("llava", s) for s in LLAVA}
    assert all(r["sequence_id"] == r["story_id"] for r in records)
    by_system = {r["system"]: r["signature"] for r in records}
    assert by_system["reference"]["inputs"] != by_system["llava"]["inputs"]  # each record names the file it came from
    assert by_system["reference"]["settings"] == by_system["llava"]["settings"]
    capsys.readouterr()
    before = out.read_text()
    assert score(folder, "llava", out, "--sequence-id-from", "story_id") == 0
    assert score(folder, "reference", out, "--sequence-id-from", "story_id") == 0
    assert out.read_text() == before  # nothing scored twice
    assert capsys.readouterr().err.count("scored 0 stories, skipped") == 2
    assert score(folder, "llava", out, "--nr-variant", "paper") == 2  # other settings are still refused
    assert "other settings" in capsys.readouterr().err


def test_without_system_every_story_of_the_release_layout_is_unknown(tmp_path: Path) -> None:
    folder = release(tmp_path)
    out = tmp_path / "scores.jsonl"
    assert run("score", str(folder / "gt_test.json"), "--out", str(out), "--metrics", "redundancy", "--no-progress") == 0
    assert {r["system"] for r in read_scores(out)[0]} == {"unknown"}


def _nr(out: Path) -> dict[tuple[str, str], float]:
    return {
        (r.system, r.story_id): r.metrics["redundancy"].score
        for r in load_records(out)[0]
        if r.metrics.get("redundancy") is not None
    }


@pytest.mark.parametrize("pairing", ["story", "sequence"])
def test_dhm_over_scored_and_imported_files_gives_each_system_its_numbers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], pairing: str
) -> None:
    folder = release(tmp_path)
    scores = tmp_path / "scores.jsonl"
    for system in FILES:
        assert score(folder, system, scores, "--sequence-id-from", "story_id") == 0
    imports = imported(folder)
    report = tmp_path / "dhm.json"
    capsys.readouterr()
    assert run("dhm", str(scores), str(imports), "--out", str(report), "--pairing", pairing, "--resamples", "0") == 0
    err = capsys.readouterr().err
    assert "conflict" not in err and "two values" not in err
    (row,) = json.loads(report.read_text())["systems"]
    nr = _nr(scores)
    paired = ["45530", "45531"]  # 45532: the human story has no G; 45533: no human story
    want_r = sum(abs(nr[("reference", s)] - nr[("llava", s)]) for s in paired) / 2
    want_g = sum(abs(math.tanh(G["reference"][s]) - math.tanh(G["llava"][s])) for s in paired) / 2  # type: ignore[arg-type]
    want_c = (abs(0.99 - 0.8) + abs(0.95 - 0.7)) / 2
    assert row["system"] == "llava" and row["N"] == 2
    assert row["d_R"] == pytest.approx(want_r, abs=1e-12) and row["d_G"] == pytest.approx(want_g, abs=1e-12)
    assert row["d_C"] == pytest.approx(want_c, abs=1e-12)
    assert row["dHM"] == pytest.approx((want_g + want_c + want_r) / 3, abs=1e-12)
    key = "story id" if pairing == "story" else "sequence"
    assert row["left out"] == {
        f"no human story shares its {key}": 1,  # 45533
        f"every human story sharing its {key} lacks one of the three scores": 1,  # 45532: no released G
    }


def test_a_second_model_system_gets_its_own_numbers(tmp_path: Path) -> None:
    folder = release(tmp_path)
    scores = tmp_path / "scores.jsonl"
    for system in FILES:
        assert score(folder, system, scores) == 0
    other = tmp_path / "other.json"
    other.write_text(json.dumps(HUMAN), encoding="utf-8")  # a "system" that copies the human stories
    assert (
        run(
            "score",
            str(other),
            "--system",
            "copy",
            "--out",
            str(scores),
            "--metrics",
            "redundancy",
            "--nr-variant",
            "reference",
            "--no-progress",
        )
        == 0
    )
    imports = imported(folder)
    long = tmp_path / "copy.csv"
    long.write_text(
        "story_id,metric,value,system\n"
        + "".join(f"{s},G,{G['reference'][s] or 0.0},copy\n{s},C,{C['reference'][s]},copy\n" for s in HUMAN)
    )
    assert run("import-scores", str(long), "--long", "--out", str(imports)) == 0
    report = tmp_path / "dhm.json"
    assert run("dhm", str(scores), str(imports), "--out", str(report), "--pairing", "story", "--resamples", "0") == 0
    rows = {r["system"]: r for r in json.loads(report.read_text())["systems"]}
    assert set(rows) == {"copy", "llava"} and rows["llava"]["N"] == 2 and rows["copy"]["N"] == 2
    assert rows["copy"]["d_R"] == 0.0 and rows["copy"]["d_C"] == 0.0 and rows["copy"]["d_G"] == 0.0
    assert rows["llava"]["d_R"] > 0


def test_long_csv_pairs_by_its_sequence_column_and_says_why_when_it_has_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = ["story_id,metric,value,system,sequence_id"]
    for k in range(3):
        rows += [f"h{k},G,0.5,reference,seq{k}", f"h{k},C,0.9,reference,seq{k}", f"h{k},R,0.9,reference,seq{k}"]
        rows += [f"m{k},G,0.1,model,seq{k}", f"m{k},C,0.6,model,seq{k}", f"m{k},R,0.7,model,seq{k}"]
    with_column = tmp_path / "long.csv"
    with_column.write_text("\n".join(rows) + "\n")
    without = tmp_path / "bare.csv"
    without.write_text("\n".join(",".join(r.split(",")[:4]) for r in rows) + "\n")
    for src in (with_column, without):
        out = tmp_path / f"{src.stem}.jsonl"
        assert run("import-scores", str(src), "--long", "--out", str(out)) == 0
        capsys.readouterr()
        report = tmp_path / f"{src.stem}.json"
        assert run("dhm", str(out), "--out", str(report), "--pairing", "sequence", "--resamples", "0") == 0
        err = capsys.readouterr().err
        (row,) = json.loads(report.read_text())["systems"]
        if src is with_column:
            assert row["N"] == 3 and row["d_C"] == pytest.approx(0.3) and row["left out"] == {}
            assert {r.sequence_id for r in load_records(out)[0]} == {"seq0", "seq1", "seq2"}
        else:
            # the human stories have every score: the true reason is that none shares the model stories' sequence
            assert row["N"] == 0 and row["left out"] == {"no human story shares its sequence": 3}
            assert "lacks" not in err and "sequence_id is its story_id" in err


def test_conflicting_nr_is_reported_and_the_computed_value_wins_in_either_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = release(tmp_path)
    scores = tmp_path / "scores.jsonl"
    for system in FILES:
        assert score(folder, system, scores, "--sequence-id-from", "story_id") == 0
    imports = imported(folder)
    released_r = tmp_path / "llava_vc_p3_R.csv"
    released_r.write_text("story_id,R_score\n45530,0.5\n45531,0.6\n")  # differs from what was computed
    assert run("import-scores", str(released_r), "--system", "llava", "--out", str(imports)) == 0
    nr = _nr(scores)
    results = []
    for order in ((scores, imports), (imports, scores)):
        capsys.readouterr()
        report = tmp_path / "dhm.json"
        assert run("dhm", *map(str, order), "--out", str(report), "--pairing", "story", "--resamples", "0") == 0
        err = capsys.readouterr().err
        assert "warning: 2 stories have two values of redundancy" in err
        assert f"llava / 45530: redundancy is {nr[('llava', '45530')]:.6g} in scores.jsonl and 0.5 in imported.jsonl" in err
        assert "scores.jsonl is used" in err
        document = json.loads(report.read_text())
        assert document["conflicts"] == {"redundancy": 2}
        results.append(document["systems"])
    assert results[0] == results[1]
    want_r = sum(abs(nr[("reference", s)] - nr[("llava", s)]) for s in ("45530", "45531")) / 2
    assert results[0][0]["d_R"] == pytest.approx(want_r, abs=1e-12)


def test_two_imported_values_keep_the_first_file_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = release(tmp_path)
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    for out, value in ((first, 0.5), (second, 0.7)):
        src = tmp_path / f"llava_{out.stem}_R.csv"
        src.write_text(f"story_id,R_score\n45530,{value}\n")
        assert run("import-scores", str(src), "--system", "llava", "--out", str(out)) == 0
    human = tmp_path / "h.jsonl"
    assert run("import-scores", str(folder / "gt_test_G.json"), "--system", "reference", "--out", str(human)) == 0
    capsys.readouterr()
    assert run("dhm", str(second), str(first), str(human), "--out", str(tmp_path / "r.json"), "--resamples", "0") == 0
    assert "redundancy is 0.7 in b.jsonl and 0.5 in a.jsonl; b.jsonl is used" in capsys.readouterr().err


def test_import_declares_sequence_ids_in_the_signature(tmp_path: Path) -> None:
    folder = release(tmp_path)
    out = imported(folder)
    records, _ = load_records(out)
    assert {r.signature["imported"]["sequence_id"] for r in records} == {"story_id"}
    assert all(r.sequence_id == r.story_id for r in records)
