# Two commands on a fresh machine: `make demo` (set up + run the default scenario), `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: demo test check bench reports mutate clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# torch==2.13.0 is the CPU build these machines hold; an unpinned torch pulls a CUDA build
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e '.[real,testing,dev,torchft,nvrx]'
	# NVRx asks for the deprecated `pynvml` shim, which warns at every `import torch`; nvidia-ml-py
	# (also installed) is the same module without it
	$(BIN)/python -m pip uninstall -q -y pynvml
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/rdzv-sim run quickstart --out runs/quickstart

# the whole suite, two tests at a time: real (processes, stores) and simulated side by side
test: $(STAMP)
	$(BIN)/python -m pytest -n 2 --durations=20

# the inner loop of a protocol change (a few minutes): no real processes, no slow tests, few examples
check: $(STAMP)
	HYPOTHESIS_PROFILE=dev $(BIN)/python -m pytest -m "not real and not slow" -n 2 -x -q

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_hrw.py
	$(BIN)/python benchmarks/torchrun_elastic.py
	$(BIN)/python benchmarks/sim_speed.py --llama

# mutation testing of the rule modules (mutmut; not part of `make test`): MODULES=recovery,kit,...
# (the groups of benchmarks/mutation.py), BUDGET seconds a group; writes reports/mutation.md
MODULES ?=
BUDGET ?= 600
mutate: $(STAMP)
	$(BIN)/python benchmarks/mutation.py --budget $(BUDGET) $(foreach m,$(subst $(comma), ,$(MODULES)),--only $(m))

comma := ,

reports: $(STAMP)
	$(BIN)/python benchmarks/scenario_reports.py reports/scenarios
	$(BIN)/rdzv-sim calibrate --out reports/calibration.yaml
	$(BIN)/rdzv-sim validate validate-small --calibration reports/calibration.yaml --out reports/validation/validate-small
	$(BIN)/rdzv-sim validate validate-small --calibration reports/calibration.yaml --out reports/validation/validate-small-2 \
		--set cluster.nodes=2 --set protocol.max_nodes=2 --set protocol.min_nodes=1
	$(BIN)/rdzv-sim validate validate-small --calibration reports/calibration.yaml --out reports/validation/validate-small-8 \
		--set cluster.nodes=8 --set protocol.max_nodes=8 --set duration=45 --set faults.0.at=25 --set faults.1.at=31
	$(BIN)/rdzv-sim validate validate-small --calibration reports/calibration.yaml --out reports/validation/validate-small-16 \
		--set cluster.nodes=16 --set protocol.max_nodes=16 --set duration=60 --set faults.0.at=40 --set faults.1.at=46
	$(BIN)/rdzv-sim validate validate-c10d --calibration reports/calibration.yaml --out reports/validation/validate-c10d

clean:
	rm -rf $(VENV) runs .pytest_cache .hypothesis
