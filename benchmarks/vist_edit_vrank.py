"""Vrank's recipe on VIST-Edit's human ratings: held-out pairwise accuracy under a split by image
sequence versus a random split by pair, next to RoViST-NR, story length and chance on the same
held-out pairs. Prints the comparison table (and writes it as JSON into the work folder).

    python benchmarks/vist_edit_vrank.py MIRROR --base MODEL_DIR [--work DIR] [--seeds 7777 7778 7779]
        [--splits sequence pair] [--epochs 8] [--lr 2e-5] [--batch-size 32] [--held-out 0.2]
        [--edit-index 0] [--threads 1] [--parallel 2]

MIRROR is a clone (bare or not) of github.com/tingyaohsu/VIST-Edit; its files are read with
``git show`` and nothing is written into it. VIST-Edit's licence forbids redistributing its data:
everything extracted goes to ``--work`` (default: a new temporary folder), never into this
repository. Nothing is written into the repository or the user's caches (HF_HUB_OFFLINE=1).

Data (the choices, printed with the table):

* judgements: ``Human_eval/AREL.csv`` and ``GLAC.csv`` read by
  :func:`vst_core.analysis.meta_eval.reader.read_vist_edit` (ids ``<sequence>:<system>``),
  only the teams whose texts are released (``auto-gen`` -> system ``AREL``/``GLAC``, ``human-edit``
  -> ``AREL-human-edit``/``GLAC-human-edit``), six aspects, five raters per story; the two files are
  merged into one long-layout CSV so the 97 sequences both files rate give pairs across the two
  models too (every two stories of one sequence rated differently, by ``pairs_from_ratings`` on
  each story's mean over raters and aspects);
* texts: ``auto_story_text_normalized`` of ``<model>/test/<sequence>.json`` for the automatic
  story; for ``human-edit`` the release does not say which of the five edits was rated, so
  ``--edit-index`` (default 0, the first listed) picks one: its ``normalized_edited_story_text_sent``
  joined, punctuation-only "sentences" dropped (both texts are the release's normalised,
  lower-cased, tokenised form);
* BLEU is left out: VIST-Edit holds no human reference story of a sequence (VIST's own test
  references are not part of the release), and the other edits are post-edits of the machine
  story being judged, so they are not independent references.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import io
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

MODELS = ("AREL", "GLAC")
TEXT_TEAMS = ("auto-gen", "human-edit")
_PUNCT = re.compile(r"^[\W_]+$")


def git_show(mirror: Path, path: str) -> bytes:
    """A file of the mirror's HEAD (bare or working clone)."""
    git_dir = mirror if (mirror / "HEAD").is_file() and not (mirror / ".git").exists() else mirror / ".git"
    return subprocess.run(["git", f"--git-dir={git_dir}", "show", f"HEAD:{path}"], check=True, capture_output=True).stdout


def edit_text(story: dict, index: int) -> str:
    """The normalised text of edit ``index`` of a VIST-Edit story file, punctuation-only sentences dropped."""
    edits = story.get("edited_stories") or []
    if not edits:
        return ""
    chosen = edits[min(index, len(edits) - 1)]
    sentences = [
        s.strip() for s in chosen.get("normalized_edited_story_text_sent") or [] if s.strip() and not _PUNCT.match(s.strip())
    ]
    return " ".join(sentences) if sentences else str(chosen.get("edited_story_text", "")).strip()


def build_data(mirror: Path, work: Path, edit_index: int) -> dict:
    """Write ``stories.jsonl`` and ``judgements.csv`` (long layout) into ``work``; check the ids."""
    from vst_core.analysis.meta_eval.reader import read_judgements, read_vist_edit
    from vst_core.data import read_story_set

    raw_dir = work / "raw"
    raw_dir.mkdir(parents=True, exist_ok=True)
    ratings: list[pd.DataFrame] = []
    stories: list[dict[str, str]] = []
    info: dict[str, Any] = {"edit_index": edit_index}
    for model in MODELS:
        raw = git_show(mirror, f"Human_eval/{model}.csv")
        (raw_dir / f"{model}.csv").write_bytes(raw)
        j = read_vist_edit(raw, model=model)
        frame = pd.read_csv(io.BytesIO(raw), dtype=str)
        sequences = sorted(set(frame["story_id"].dropna().str.strip()))
        info[f"{model}_sequences"] = len(sequences)
        info[f"{model}_problems"] = j.problems
        keep = {f"{s}:{model}" for s in sequences} | {f"{s}:{model}-human-edit" for s in sequences}
        part = j.ratings[j.ratings["story_id"].isin(keep)].copy()
        part["sequence_id"] = part["story_id"].str.split(":").str[0]
        ratings.append(part)
        for seq in sequences:
            story = json.loads(git_show(mirror, f"{model}/test/{seq}.json"))
            auto = str(story.get("auto_story_text_normalized", "")).strip()
            stories.append({"story_id": f"{seq}:{model}", "sequence_id": seq, "system": model, "text": auto})
            edit = edit_text(story, edit_index)
            stories.append(
                {"story_id": f"{seq}:{model}-human-edit", "sequence_id": seq, "system": f"{model}-human-edit", "text": edit}
            )
    long = pd.concat(ratings, ignore_index=True)[["story_id", "rater", "aspect", "value", "system", "sequence_id"]]
    judgements_path, stories_path = work / "judgements.csv", work / "stories.jsonl"
    long.to_csv(judgements_path, index=False)
    stories_path.write_text("".join(json.dumps(s) + "\n" for s in stories))
    # the ids match: every rated (texted) story is in the story set, every story is rated
    story_set = read_story_set(stories_path, check_images=False)
    set_ids = {s.story_id for s in story_set}
    rated = set(read_judgements(judgements_path, layout="long").ratings["story_id"])
    info.update(
        stories=len(set_ids),
        rated_stories=len(rated),
        rated_without_text=sorted(rated - set_ids)[:5],
        stories_without_rating=sorted(set_ids - rated)[:5],
        empty_texts=sum(1 for s in story_set if s.is_empty),
        sequences=len({s.sequence_id for s in story_set}),
    )
    if rated - set_ids or set_ids - rated:
        raise SystemExit(f"ids do not match: {info}")
    return {"stories": stories_path, "judgements": judgements_path, "info": info}


def all_pairs(judgements: Path, stories: Path) -> pd.DataFrame:
    """Every ranked pair train-vrank will see (before the split), as a frame."""
    from vst_core.analysis.meta_eval.reader import read_judgements
    from vst_core.data import read_story_set
    from vst_core.learned.pairs import pairs_of, story_texts

    story_set = read_story_set(stories, check_images=False)
    sequences = {s.story_id: s.sequence_id for s in story_set}
    pairs, _ = pairs_of(read_judgements(judgements, layout="long"), story_texts(story_set), sequences)
    return pd.DataFrame([p.__dict__ for p in pairs])


def score_baselines(stories: Path, work: Path, seed: int) -> pd.DataFrame:
    """story_id -> RoViST-NR (``vst score --metrics redundancy``), length in words, the edit prior."""
    from vst_core.api import read_scores, scores_frame
    from vst_core.data import read_story_set

    out = work / "nr_scores.jsonl"
    if not out.exists():
        subprocess.run(
            [sys.executable, "-m", "vst_core", "score", str(stories), "--metrics", "redundancy", "--out", str(out)],
            check=True,
            env=_env(1),
        )
    records, problems = read_scores(out)
    frame = scores_frame(records).set_index("story")
    nr_col = next(c for c in frame.columns if c.lower() in ("rovist-nr", "nr", "redundancy", "rovist_nr"))
    data = pd.DataFrame({"RoViST-NR": frame[nr_col].astype(float)})
    words = {s.story_id: len(s.text.split()) for s in read_story_set(stories, check_images=False)}
    data["length (words)"] = pd.Series(words, dtype=float)
    # the trivial prior "a human edit beats a machine story" (ties, i.e. two of a kind, count as wrong)
    data["edit beats machine"] = pd.Series({k: float(k.endswith("-human-edit")) for k in words})
    data.attrs["nr_column"] = nr_col
    data.attrs["problems"] = [str(p) for p in problems]
    return data


def _env(threads: int) -> dict:
    env = dict(os.environ)
    env.update(
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        OMP_NUM_THREADS=str(threads),
        MKL_NUM_THREADS=str(threads),
        TOKENIZERS_PARALLELISM="false",
    )
    if "HF_HOME" not in os.environ:  # never the user's cache
        env["HF_HOME"] = str(Path(tempfile.gettempdir()) / "vist_edit_vrank_hf")
    return env


def train(data: dict, out: Path, args: argparse.Namespace, split: str, seed: int, lr: float) -> dict:
    """One ``vst train-vrank`` run (resumed when its folder holds a checkpoint); its wall time."""
    cmd = [
        sys.executable, "-c",
        f"import torch; torch.set_num_threads({args.threads}); torch.set_num_interop_threads(1); "
        "import sys; from vst_core.cli import main; sys.exit(main())",
        "train-vrank", str(data["judgements"]), "--layout", "long", "--stories", str(data["stories"]),
        "--base", args.base, "--pooling", "auto", "--out", str(out), "--split", split,
        "--held-out", str(args.held_out), "--seed", str(seed), "--lr", str(lr), "--epochs", str(args.epochs),
        "--batch-size", str(args.batch_size), "--max-length", str(args.max_length), "--device", "cpu", "--no-progress",
    ]  # fmt: skip
    start = time.perf_counter()
    log = out.parent / f"{out.name}.log"
    with open(log, "w") as fh:
        rc = subprocess.run(cmd, env=_env(args.threads), stdout=fh, stderr=subprocess.STDOUT).returncode
    return {"rc": rc, "wall_s": round(time.perf_counter() - start, 1), "log": str(log)}


def _acc_row(method: str, n: int, correct: int, ties: int) -> dict:
    from vst_core.learned.card import wilson

    lo, hi = wilson(correct, n)
    return {
        "method": method,
        "n": n,
        "correct": correct,
        "ties": ties,
        "accuracy": correct / n if n else None,
        "low": lo,
        "high": hi,
    }


def evaluate(folder: Path, baselines: pd.DataFrame, seed: int) -> list[dict]:
    """Vrank (held_out_table of predictions.csv) and the baselines (pairwise_table) on the same pairs."""
    from vst_core.analysis.meta_eval.stats import pairwise_table
    from vst_core.learned.card import held_out_table

    pred = pd.read_csv(folder / "predictions.csv", dtype={"sequence_id": str, "better": str, "worse": str})
    rows = []
    v = held_out_table(pred).iloc[0]
    rows.append(_acc_row("Vrank", int(v["n"]), int(v["correct"]), int(v["ties"])))
    data = baselines.copy()
    rng = np.random.default_rng(seed)
    data["chance (random scores)"] = rng.random(len(data))
    table = pairwise_table(pred, data, list(data.columns))
    for _, r in table[table["group"] == "all"].iterrows():
        rows.append(_acc_row(r["metric"], int(r["n"]), int(r["correct"]), int(r["ties"])) | {"missing": int(r["missing"])})
    card = json.loads((folder / "card.json").read_text())
    epochs = card.get("epochs_run") or []
    for row in rows:
        row["held_out_sequences"] = int(pred["sequence_id"].nunique())
        row["epochs"] = len(epochs)
    rows[0]["train_loss_by_epoch"] = [round(e.get("train_loss", float("nan")), 4) for e in epochs]
    rows[0]["held_out_accuracy_by_epoch"] = [e.get("held_out_accuracy") for e in epochs]
    return rows


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("mirror", type=Path, help="clone of github.com/tingyaohsu/VIST-Edit (bare git dir or working clone)")
    p.add_argument("--base", required=True, help="encoder folder or name (e.g. the all-MiniLM-L6-v2 folder)")
    p.add_argument("--work", type=Path, help="work folder (default: a new temporary folder); never inside the repository")
    p.add_argument("--seeds", type=int, nargs="+", default=[7777])
    p.add_argument("--splits", nargs="+", choices=("sequence", "pair"), default=["sequence", "pair"])
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--lr", type=float, nargs="+", default=[2e-5], help="one run per learning rate")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--max-length", type=int, default=256)
    p.add_argument("--held-out", type=float, default=0.2)
    p.add_argument("--edit-index", type=int, default=0, help="which of the five edits stands for human-edit")
    p.add_argument("--threads", type=int, default=1, help="torch threads per training run")
    p.add_argument("--parallel", type=int, default=1, help="training runs at once")
    p.add_argument("--skip-train", action="store_true", help="only evaluate runs already in the work folder")
    args = p.parse_args(argv)

    repo = Path(__file__).resolve().parents[1]
    work = (args.work or Path(tempfile.mkdtemp(prefix="vist_edit_vrank_"))).resolve()
    if work == repo or repo in work.parents:
        p.error(f"--work {work} is inside the repository; VIST-Edit's data must stay outside it")
    work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    print(f"work folder: {work}", file=sys.stderr)

    data = build_data(args.mirror, work, args.edit_index)
    pairs = all_pairs(data["judgements"], data["stories"])
    info = data["info"] | {
        "pairs": len(pairs),
        "pairs_within_model": int(
            (pairs["better"].str.split(":").str[1].str[:4] == pairs["worse"].str.split(":").str[1].str[:4]).sum()
        ),
        "pairs_with_edit_better": int(pairs["better"].str.endswith("human-edit").sum()),
        "pair_sequences": int(pairs["sequence_id"].nunique()),
    }
    print(json.dumps(info, indent=1), file=sys.stderr)
    baselines = score_baselines(data["stories"], work, args.seeds[0])

    runs = [(split, seed, lr) for lr in args.lr for seed in args.seeds for split in args.splits]
    timings: dict[str, dict] = {}
    if not args.skip_train:
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.parallel) as pool:
            futures = {
                pool.submit(train, data, work / f"vrank_{s}_seed{seed}_lr{lr:g}", args, s, seed, lr): (s, seed, lr)
                for s, seed, lr in runs
            }
            for fut in concurrent.futures.as_completed(futures):
                s, seed, lr = futures[fut]
                timings[f"vrank_{s}_seed{seed}_lr{lr:g}"] = fut.result()
                print(f"done {s} seed {seed} lr {lr:g}: {timings[f'vrank_{s}_seed{seed}_lr{lr:g}']}", file=sys.stderr)
    rows = []
    for split, seed, lr in runs:
        folder = work / f"vrank_{split}_seed{seed}_lr{lr:g}"
        if not (folder / "predictions.csv").is_file():
            print(f"no predictions in {folder}; skipped", file=sys.stderr)
            continue
        for row in evaluate(folder, baselines, seed):
            rows.append(
                {
                    "split": split,
                    "seed": seed,
                    "lr": lr,
                    **row,
                    **{k: v for k, v in timings.get(folder.name, {}).items() if k == "wall_s"},
                }
            )
    table = pd.DataFrame(rows)
    result = {
        "info": info,
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, threads/run {args.threads}",
        "rows": rows,
    }
    (work / "comparison.json").write_text(json.dumps(result, indent=1, default=str))
    if table.empty:
        print("no run to report")
        return 1
    print(
        f"\nVIST-Edit ({info['pairs']} pairs from {info['pair_sequences']} sequences; edit #{args.edit_index} stands for human-edit; held-out {args.held_out})"
    )
    print(f"{'split':9} {'lr':>7} {'seed':>5} {'method':24} {'n':>4} {'acc':>6}  95% Wilson      ties ep")
    for r in rows:
        ci = f"[{_fmt(r['low'])}, {_fmt(r['high'])}]"
        print(
            f"{r['split']:9} {r['lr']:>7g} {r['seed']:>5} {r['method']:24} {r['n']:>4} {_fmt(r['accuracy']):>6}  {ci:15} {r['ties']:>4} {r['epochs']:>2}"
        )
    if len(args.seeds) > 1:
        print("\nmean ± sd over seeds (accuracy)")
        agg = table.groupby(["split", "lr", "method"])["accuracy"].agg(["mean", "std", "count"]).reset_index()
        for r in agg.itertuples():
            print(f"{r.split:9} {r.lr:>7g} {r.method:24} {r.mean:.3f} ± {r.std:.3f} (seeds {r.count})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
