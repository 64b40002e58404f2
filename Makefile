# The two commands a learner needs: `make lab` and `make test`. Both set up .venv on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
CLASSROOM_STAMP := $(VENV)/.installed-classroom
export PYTHONHASHSEED := 0

.PHONY: lab test mutate demo doctor bench execute exercises classroom clean-venv

# Two installs, two stamps. A learner's commands need only the `course` extra (JupyterLab, the SDKs, what the
# `course` command imports); `make test` adds the `test` extra on top (pytest, nbval, Playwright, nbgrader...),
# so `make test` after `make lab` installs only the test tools. Both redo themselves when pyproject.toml changes.
# After each install, one optional package goes: jsonschema's checker for the "iri" format (rfc3987-syntax, which
# Jupyter's packages ask for) builds about 35 parsers when imported, 1.7 s of processor time in every process that
# reads a notebook (JupyterLab, nbclient, `course check`, each test worker). No Jupyter schema uses that format,
# and jsonschema skips a format whose checker is not installed (tests/test_install.py checks both).
SLOW_OPTIONAL := rfc3987-syntax lark

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[course]'
	$(BIN)/python -m pip uninstall --quiet --yes $(SLOW_OPTIONAL)
	touch $(STAMP)

$(TEST_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test]'
	$(BIN)/python -m pip uninstall --quiet --yes $(SLOW_OPTIONAL)
	touch $(TEST_STAMP)

$(CLASSROOM_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[classroom]'
	$(BIN)/python -m pip uninstall --quiet --yes $(SLOW_OPTIONAL)
	touch $(CLASSROOM_STAMP)

# The course folder is the root (exercises/, solutions/, README reachable; the lessons' links work), with
# lesson 00 open. LAB_ARGS passes more options, e.g. `make lab LAB_ARGS=--no-browser`.
lab: $(STAMP)
	$(BIN)/jupyter lab --ServerApp.root_dir="$(CURDIR)" --LabApp.default_url=/lab/tree/notebooks/00_welcome.ipynb \
		$(if $(filter 0,$(shell id -u)),--allow-root,) $(LAB_ARGS)

test: $(TEST_STAMP)
	$(BIN)/python -m pytest -n auto

# Mutation testing (issue 16): how many small bugs planted in each stage module the tests catch. Minutes, not
# seconds, so not part of `make test`. `make mutate MUTATE_ARGS="course_lib/tools.py --show"` for one module.
mutate: $(TEST_STAMP)
	$(BIN)/python scripts/mutate.py $(MUTATE_ARGS)

execute: $(STAMP)
	$(BIN)/python scripts/execute.py

exercises: $(STAMP)
	$(BIN)/course make-exercises

demo: $(STAMP)
	$(BIN)/course demo

doctor: $(STAMP)
	$(BIN)/course doctor

bench: $(STAMP)
	$(BIN)/python benchmarks/run.py

# A JupyterHub on this machine with an instructor and two students, nbgrader's exchange between them
# (classroom/README.md). `make classroom CLASSROOM_ARGS="--port 8020 --students ann,ben,cho"`.
classroom: $(CLASSROOM_STAMP)
	$(BIN)/python scripts/classroom.py $(CLASSROOM_ARGS)

clean-venv:
	rm -rf $(VENV)
