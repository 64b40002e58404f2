"""Two installs: `make lab` and the other learner commands install the `course` extra only; `make test` adds
the `test` extra (the test tools and nbgrader). These tests fail if the split breaks: a test tool creeping into
the learner's install, a module course_lib or a lesson imports that the learner's install lacks, a make target
installing the wrong extra, an extra named somewhere that does not exist, or course_lib's data not shipping."""
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from IPython.core.inputtransformer2 import TransformerManager
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PROJECT = canonicalize_name(PYPROJECT["project"]["name"])
EXTRAS = PYPROJECT["project"]["optional-dependencies"]
LEARNER, TEST = "course", "test"
TEST_TOOLS = {"pytest", "pytest-xdist", "hypothesis", "nbval", "playwright", "nbgrader", "rank-bm25", "mutmut",
              "jupyterhub"}
# What learners run: the lessons, the exercises, and the code behind `course` and the make targets.
LEARNER_CODE = ["course_lib", "notebooks", "exercises", "solutions", "scripts", "benchmarks"]
LEARNER_TARGETS = ["lab", "execute", "exercises", "demo", "doctor", "bench"]


def resolve(*extras: str) -> set[str]:
    """The distributions the given extras name, self-references (`course_lib[course]`) followed."""
    names, todo, seen = set(), list(extras), set()
    while todo:
        extra = todo.pop()
        assert extra in EXTRAS, f"pyproject.toml has no extra named {extra!r}"
        if extra in seen:
            continue
        seen.add(extra)
        for line in EXTRAS[extra]:
            req = Requirement(line)
            if canonicalize_name(req.name) == PROJECT:
                todo.extend(req.extras)
            else:
                names.add(canonicalize_name(req.name))
    return names


def imported_modules(source: str) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def learner_imports() -> dict[str, set[str]]:
    """Third-party top-level module -> the files that import it. Code cells go through IPython's transforms; a
    module beside a script or notebook (benchmarks/seed_loop.py for benchmarks/run.py) is not third-party; inside the
    package, `import openai` is the SDK even though course_lib/models/openai.py sits beside it."""
    found: dict[str, set[str]] = {}
    transform = TransformerManager().transform_cell
    for folder in LEARNER_CODE:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix == ".py":
                sources = [path.read_text(encoding="utf-8")]
            elif path.suffix == ".ipynb" and ".ipynb_checkpoints" not in path.parts:
                cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
                sources = [transform("".join(c["source"])) for c in cells if c["cell_type"] == "code"]
            else:
                continue
            script = not (path.parent / "__init__.py").exists()   # a script or notebook: its folder is on sys.path
            beside = {p.stem for p in path.parent.iterdir() if p.suffix == ".py" or p.is_dir()} if script else set()
            for source in sources:
                for name in imported_modules(source) - beside:
                    found.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    return {name: files for name, files in found.items()
            if name not in sys.stdlib_module_names and name != "course_lib"}


def course_copy(tmp_path: Path, stamps: tuple[str, ...] = ()) -> Path:
    """The Makefile and pyproject.toml in a temporary folder, with only the given stamps, each newer than the last."""
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / ".venv").mkdir()
    for i, stamp in enumerate(stamps):
        t = (tmp_path / "pyproject.toml").stat().st_mtime + 10 * (i + 1)
        (tmp_path / ".venv" / stamp).touch()
        os.utime(tmp_path / ".venv" / stamp, (t, t))
    return tmp_path


def pip_commands(target: str, folder: Path) -> list[str]:
    """The pip installs `make <target>` would run there (`make -n`: printed, not run), pip's own upgrade aside."""
    result = subprocess.run(["make", "-n", target], cwd=folder, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return [line for line in result.stdout.splitlines() if "pip install" in line and "--upgrade pip" not in line]


def installed_extras(pip_lines: list[str]) -> list[set[str]]:
    """For each editable install line (`pip install -e '.[course]'`), the extras it names."""
    out = []
    for line in pip_lines:
        match = re.search(r"-e\s+'?\.\[([\w,\-]+)\]'?", line)
        assert match, f"not an editable install of this folder with extras: {line}"
        out.append(set(match[1].split(",")))
    return out


# --- pyproject.toml -----------------------------------------------------------------------------------------

def test_the_learner_extra_has_no_test_tools():
    assert not resolve(LEARNER) & TEST_TOOLS, "a test tool is in the learner's install"


def test_the_test_extra_is_the_learner_extra_plus_the_test_tools():
    learner, test = resolve(LEARNER), resolve(TEST)
    assert learner <= test and TEST_TOOLS <= test
    assert test - learner == TEST_TOOLS, "the test extra should add the test tools and nothing a learner needs"


def test_the_ipykernel_pin_stays():
    assert "ipykernel>=6.29,<7" in EXTRAS[LEARNER]   # see the comment beside it in pyproject.toml


def test_dev_is_an_alias_of_test():
    assert "dev" not in EXTRAS or resolve("dev") == resolve(TEST)


def test_every_module_learner_code_imports_is_named_in_the_learner_extra():
    learner = resolve(LEARNER)
    owners = metadata.packages_distributions()
    missing = {}
    for module, files in sorted(learner_imports().items()):
        dists = {canonicalize_name(d) for d in owners.get(module, [])}
        assert dists, f"{module} (imported by {sorted(files)}) is not installed here, so its distribution is unknown"
        if not dists & learner:
            missing[module] = (sorted(dists), sorted(files))
    assert not missing, f"imported by learner code but not named in the {LEARNER!r} extra: {missing}"


def test_the_scan_sees_the_imports_it_must():
    modules = learner_imports()
    assert {"anthropic", "openai", "matplotlib", "ipywidgets", "nbformat", "nbclient"} <= set(modules)
    assert "notebooks/08a_real_apis_on_the_wire.ipynb" in modules["anthropic"]


def test_every_extra_the_repository_names_exists():
    """Every `pip install -e '.[name]'` or `.[name]` in the Makefile, CI, README, environment.yml, code and tests."""
    tests = [p for p in sorted((ROOT / "tests").glob("*.py")) if p.name != Path(__file__).name]  # not this file
    files = [ROOT / "Makefile", ROOT / ".ci" / "run", ROOT / "README.md", ROOT / "environment.yml",
             *sorted((ROOT / "course_lib").rglob("*.py")), *sorted((ROOT / "scripts").glob("*.py")), *tests]
    named = {}
    for path in files:
        for group in re.findall(r"(?<![\w/])\.\[([\w,\-]+)\]", path.read_text(encoding="utf-8")):
            for extra in group.split(","):
                named.setdefault(extra, set()).add(str(path.relative_to(ROOT)))
    assert named, "the scan found no `.[extra]` at all"
    unknown = {extra: sorted(where) for extra, where in named.items() if extra not in EXTRAS}
    assert not unknown, f"extras named but not defined in pyproject.toml: {unknown}"


# --- packaging ----------------------------------------------------------------------------------------------

def test_every_folder_of_course_lib_is_a_listed_package():
    """An unlisted importable folder (course_lib/data) makes setuptools warn and may be left out."""
    folders = {".".join(p.relative_to(ROOT).parts) for p in [ROOT / "course_lib", *(ROOT / "course_lib").rglob("*")]
               if p.is_dir() and p.name != "__pycache__" and not p.name.startswith(".")}
    assert set(PYPROJECT["tool"]["setuptools"]["packages"]) == folders


def test_the_data_files_are_package_data():
    package_data = PYPROJECT["tool"]["setuptools"]["package-data"]
    data = sorted((ROOT / "course_lib" / "data").iterdir())
    assert data, "course_lib/data holds the lookup tools' JSON"
    for path in data:
        assert any(path.match(pattern) for pattern in package_data.get("course_lib.data", [])), path.name


# --- the Makefile, through the commands users type -----------------------------------------------------------

needs_make = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed (.ci/run installs it)")


@needs_make
@pytest.mark.parametrize("target", LEARNER_TARGETS)
def test_a_learner_command_on_a_fresh_clone_installs_the_learner_extra_only(target, tmp_path):
    pip = pip_commands(target, course_copy(tmp_path))
    assert installed_extras(pip) == [{LEARNER}], pip


@needs_make
def test_make_test_on_a_fresh_clone_installs_the_learner_extra_then_the_test_extra(tmp_path):
    pip = pip_commands("test", course_copy(tmp_path))
    assert installed_extras(pip) == [{LEARNER}, {TEST}], pip


@needs_make
def test_make_test_after_make_lab_only_adds_the_test_extra(tmp_path):
    pip = pip_commands("test", course_copy(tmp_path, stamps=(".installed",)))
    assert installed_extras(pip) == [{TEST}], pip


@needs_make
@pytest.mark.parametrize("target", ["lab", "test"])
def test_nothing_is_installed_once_the_stamps_are_fresh(target, tmp_path):
    assert pip_commands(target, course_copy(tmp_path, stamps=(".installed", ".installed-test"))) == []


@needs_make
def test_after_an_edit_to_pyproject_make_lab_reinstalls_the_learner_extra_only(tmp_path):
    folder = course_copy(tmp_path, stamps=(".installed", ".installed-test"))
    later = (folder / ".venv" / ".installed-test").stat().st_mtime + 10
    os.utime(folder / "pyproject.toml", (later, later))
    assert installed_extras(pip_commands("lab", folder)) == [{LEARNER}]
    assert installed_extras(pip_commands("test", folder)) == [{LEARNER}, {TEST}]


@needs_make
@pytest.mark.parametrize("target", ["lab", "test"])
def test_each_install_is_followed_by_removing_the_slow_iri_checker(target, tmp_path):
    """The Makefile's reason: rfc3987-syntax costs every process that reads a notebook 1.7 s of processor time."""
    result = subprocess.run(["make", "-n", target], cwd=course_copy(tmp_path), capture_output=True, text=True,
                            timeout=60)
    lines = [line for line in result.stdout.splitlines() if " -m pip " in line and "--upgrade pip" not in line]
    installs = [i for i, line in enumerate(lines) if "pip install" in line]
    assert installs
    for i in installs:
        assert "pip uninstall" in lines[i + 1] and "rfc3987-syntax" in lines[i + 1], lines


@pytest.mark.skipif(not (Path(sys.prefix) / ".installed").exists(), reason="runs in the .venv that make builds")
def test_notebooks_are_read_and_validated_without_the_slow_iri_checker():
    code = ("import sys, nbformat, jsonschema\n"
            "nbformat.validate(nbformat.read(sys.argv[1], as_version=4))\n"
            "checker = jsonschema.Draft7Validator.FORMAT_CHECKER\n"
            "jsonschema.Draft7Validator({'format': 'iri'}, format_checker=checker).validate('not an IRI')\n"
            "print(sorted(m for m in sys.modules if m.startswith(('rfc3987', 'lark'))))")
    done = subprocess.run([sys.executable, "-c", code, str(ROOT / "notebooks" / "00_welcome.ipynb")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stdout + done.stderr


def test_the_conda_environment_installs_the_learner_extra_on_a_python_the_project_supports():
    """The README's conda path: environment.yml brings only Python and pip from conda and installs the same
    `course` extra as `make lab`, so the versions live in one place (pyproject.toml). Conda itself is not run."""
    import yaml
    from packaging.specifiers import SpecifierSet
    env = yaml.safe_load((ROOT / "environment.yml").read_text(encoding="utf-8"))
    from_conda = [d for d in env["dependencies"] if isinstance(d, str)]
    from_pip = [d["pip"] for d in env["dependencies"] if isinstance(d, dict)]
    python = next(d for d in from_conda if d.split("=")[0] == "python")
    assert python.split("=")[1] in SpecifierSet(PYPROJECT["project"]["requires-python"])
    assert set(from_conda) == {python, "pip"}, "a package from conda would bypass the extras' pins"
    assert from_pip == [["-e .[course]"]] and installed_extras(["pip install " + from_pip[0][0]]) == [{LEARNER}]
