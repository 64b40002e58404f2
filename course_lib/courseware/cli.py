"""The ``course`` command: ``course demo [GOAL]`` runs the agent in the terminal, ``course doctor`` checks the set-up.

``demo`` uses the scripted model of stage 07 (a fixed list of replies standing in for an LLM, no network),
picking the course scenario that fits the goal, and prints every step as it happens.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
from importlib import metadata
from pathlib import Path

from .. import __version__, default_tools
from ..agent import Agent, Step
from ..models.providers import PROVIDERS
from ..models.scripted import ScriptedModel
from .scenarios import SCENARIOS

# Words that pick a scenario for a goal typed on the command line.
_KEYWORDS = {"save": ("save", "write", "저장"),   # first: "save the price" is about saving
             "price": ("cost", "price", "unit", "단가", "가격", "얼마"),
             "trip": ("trip", "travel", "출장"),
             "divide": ("divide", "divided", "나누기", "/0", "/ 0"),
             "notice": ("notice", "공지"),
             "repeat": ("repeat", "again", "반복")}


def pick_scenario(goal: str) -> str | None:
    """The name of the scenario whose goal or keywords match ``goal``, or None."""
    lowered = goal.casefold()
    for name, scenario in SCENARIOS.items():
        if lowered == scenario["goal"].casefold():
            return name
    return next((name for name, words in _KEYWORDS.items() if any(w in lowered for w in words)), None)


def demo_model(goal: str) -> ScriptedModel:
    name = pick_scenario(goal)
    if name:
        return ScriptedModel(SCENARIOS[name]["replies"])
    known = " | ".join(s["goal"] for s in SCENARIOS.values())
    note = ("I am the scripted demo model, not a real LLM, so I can only play the course scenarios "
            f"({known}). A real model arrives in stage 08.")
    return ScriptedModel([json.dumps({"tool": "finish", "args": {"answer": note}})])


def format_step(step: Step) -> str:
    """One line per tool call, as in ``[1] lookup({"topic": "단가"}) -> 개당 $24``."""
    lines = [f"[{step.number}] {run.tool}({json.dumps(run.args, ensure_ascii=False)}) -> "
             f"{_one_line(run.observation.content)}" for run in step.runs]
    if step.answer is not None:
        lines.append(f"[{step.number}] finish")
    elif step.error:
        lines.append(f"[{step.number}] {step.error}")
    return "\n".join(lines)


def _one_line(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def cmd_demo(args) -> int:
    goal = args.goal or SCENARIOS["price"]["goal"]
    if args.model == "scripted":
        model, label = demo_model(goal), "scripted (a fixed list of replies standing in for an LLM; no network, no key)"
    else:
        from ..models.base import ModelError
        from .livecheck import live_model   # a real model from its provider's name; Ollama must be running
        try:
            model = live_model(args.model)
        except ModelError as e:
            print(f"course demo --model {args.model}: {e}", file=sys.stderr)
            print("`course demo` (the scripted model) runs with no key and no network.", file=sys.stderr)
            return 1
        label = f"{args.model}, live: {model.model}"
    from .approval import ApprovalGate
    gate = ApprovalGate()   # asks y/n in a terminal; denies when nobody can answer
    agent = Agent({**default_tools(), "write_file": gate.write_file}, model, max_steps=args.max_steps,
                  on_step=lambda step: print(format_step(step), flush=True))
    print(f"Goal: {goal}")
    print(f"Model: {label}\n")
    answer = agent.run(goal)
    print(f"\nAnswer: {answer}")
    print(f"(stop reason: {agent.stop_reason}, steps: {agent.steps})")
    return 1 if agent.stop_reason == "model_error" else 0   # a failed API call is a failure for a script too


def _read(args, option: str, path, read):
    """``read(path)``, or a one-line usage error under eval's usage naming the option and the file (exit 2)."""
    try:
        return read(path)
    except OSError as e:
        args.error(f"{option} {path}: cannot read it ({e.strerror or e})")
    except json.JSONDecodeError as e:
        args.error(f"{option} {path}: not JSON ({e})")
    except RecursionError:   # JSON nested deeper than Python's parser goes
        args.error(f"{option} {path}: its JSON is nested too deeply to read")
    except ValueError as e:   # not a task list or a saved run, or a broken task or run record in it
        args.error(f"{option} {path}: {e}")


def load_results(path) -> list[dict]:
    """The run records a ``course eval --out`` file saved; ValueError if it holds none, or not run records."""
    from ..evaluation import passes_by_task
    saved = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(saved, dict) or "results" not in saved:
        raise ValueError('it holds no "results": compare files saved with --out (a --json summary has no runs)')
    passes_by_task(saved["results"])   # a ValueError naming the first record that is not a run's
    return saved["results"]


def eval_compare(args, ev) -> int:
    """``course eval --compare OLD NEW``: a line per changed task (a task missing from NEW is a regression)."""
    rows = ev.compare(*(_read(args, "--compare", path, load_results) for path in args.compare))
    counts = {"regressions": sum(r["change"] == "regression" for r in rows),
              "fixes": sum(r["change"] == "fix" for r in rows), "missing": sum(r["after"] is None for r in rows)}
    lines = [f"{r['change']:<10} {r['task']:<28} passed {r['before']:.0%} → "
             + ("missing from NEW" if r["after"] is None else f"{r['after']:.0%}")
             for r in sorted(rows, key=lambda r: r["change"] != "regression")]   # regressions first
    lines.append(f"{counts['regressions']} regression(s), {counts['fixes']} fix(es)"
                 + (f"; {counts['missing']} task(s) of OLD missing from NEW" if counts["missing"] else ""))
    print(json.dumps({**counts, "changes": rows}, ensure_ascii=False) if args.json else "\n".join(lines))
    return 1 if counts["regressions"] else 0


def cmd_eval(args) -> int:
    """Run the task suite (stage 12) and print a row per run and a summary; or compare two saved runs."""
    from .. import evaluation as ev
    from .eval_lab import SCRIPTED
    if args.compare:
        return eval_compare(args, ev)
    tasks = _read(args, "--tasks", args.tasks, ev.load_tasks)
    if args.model in SCRIPTED:
        make_model, label = SCRIPTED[args.model], f"{args.model} (a scripted stand-in, not a model)"
    else:
        from ..models.base import ModelError
        from .livecheck import live_model
        try:
            live_model(args.model)   # fail at once, with the reason, if its key or server is missing
        except ModelError as e:
            print(f"course eval --model {args.model}: {e}", file=sys.stderr)
            return 2
        make_model, label = (lambda task: live_model(args.model)), f"{args.model}, live"
    planned, done, progress = len(tasks) * args.repeat, [], sys.stderr if args.json else sys.stdout

    def show(r):   # progress as each run finishes: a row, or with --json a short line on stderr
        done.append(r)
        mark, width = "✓" if r["passed"] else "✗", len(str(planned))
        row = f"[{len(done):>{width}}/{planned}] {mark} {r['task']} #{r['repeat'] + 1}"
        if not args.json:   # why it failed: the grade (answer, trajectory) that failed
            why = "; ".join(w for w, ok in zip(r["why"], (r["answer_ok"], r["trajectory_ok"])) if not ok)
            why = f"  {_one_line(why, 80)}" if why else ""
            row = (f"{row:<40} steps {r['steps']:>2}  tokens {r['input_tokens'] + r['output_tokens']:>6,}  "
                   f"${r['cost']:.4f}  {r['stop_reason']:<13} {r['seconds']:.2f} s{why}")
        print(row, file=progress, flush=True)
    print(f"{len(tasks)} tasks × {args.repeat}, model: {label}, {args.jobs} at a time", file=progress, flush=True)
    try:
        results = ev.run_suite(tasks, make_model, jobs=args.jobs, repeat=args.repeat, latency_ms=args.latency_ms,
                               on_result=show)
    except ev.Interrupted as stopped:   # Ctrl-C: the runs that finished are summarised and saved, exit 130
        results = stopped.results
    summary, interrupted = ev.summarise(results), len(results) < planned
    report = {"model": args.model, "planned": planned, "interrupted": interrupted, "summary": summary}
    if args.out:
        text = json.dumps({**report, "results": results}, ensure_ascii=False, indent=1, default=str)
        Path(args.out).write_text(text + "\n", "utf-8")
    shown = {**report, "summary": {k: round(v, 6) if type(v) is float else v for k, v in summary.items()}}
    print(json.dumps(shown, ensure_ascii=False) if args.json else   # 0.555556, not 0.5555555555555556
          f"passed {summary['passed']}/{summary['runs']} ({summary['pass_rate']:.0%}), pass^{summary['k']} "
          f"{summary['pass^k']:.0%}, mean steps {summary['mean_steps']:.1f}, {summary['total_tokens']:,} tokens, "
          f"${summary['cost']:.4f} at example prices", flush=True)
    if interrupted:
        print(f"interrupted: {len(results)} of {planned} runs had finished; the summary covers them", file=sys.stderr)
    return 130 if interrupted else 0


_PACKAGES = ("anthropic", "openai", "jupyterlab", "ipykernel", "ipywidgets", "matplotlib")   # `make lab`
_TEST_PACKAGES = ("pytest", "nbval", "hypothesis")   # only `make test` needs these
_KEYS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")   # secrets: only whether they are set
_SETTINGS = ("ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "COURSE_MAX_STEPS", "COURSE_ANTHROPIC_MODEL",
             "COURSE_OPENAI_MODEL", "COURSE_OLLAMA_MODEL", "COURSE_ANTHROPIC_THINKING", "COURSE_ANTHROPIC_EFFORT")


def _setting_problem(name: str) -> str | None:
    """Check a setting with the same code that will read it, so doctor and the run agree."""
    from ..agent import default_max_steps
    from ..models.anthropic import EFFORTS, THINKING, _setting
    try:
        if name == "COURSE_MAX_STEPS":
            default_max_steps()
        elif name == "COURSE_ANTHROPIC_THINKING":
            _setting(None, name, tuple(THINKING), "thinking")
        elif name == "COURSE_ANTHROPIC_EFFORT":
            _setting(None, name, EFFORTS, "effort")
    except ValueError as e:
        return str(e)
    return None


def _print_settings() -> int:
    """Keys: set or not, never their values. Other settings: their value (a URL without any user:password@)."""
    problems = 0
    for key in _KEYS:
        print(f"{key:<26} {'set' if os.environ.get(key) else 'not set'}")
    for name in _SETTINGS:
        value = os.environ.get(name, "").strip()
        if not value:
            print(f"{name:<26} not set")
            continue
        shown = re.sub(r"//[^/@]*@", "//", value) if name.endswith("_URL") else value
        problem = _setting_problem(name)
        problems += problem is not None
        verdict = "INVALID: " + problem if problem else "see the models below" if name.endswith("_MODEL") else "ok"
        print(f"{name:<26} {shown}  {verdict}")   # a model ID's verdict is the lifecycle check's, further down
    return problems


def _notebook_dir() -> Path | None:
    for base in (Path.cwd(), Path(__file__).resolve().parents[2]):
        if (base / "notebooks").is_dir():
            return base / "notebooks"
    return None


def _kernel_problem(name: str, cache: dict) -> str | None:
    if name not in cache:
        try:
            from jupyter_client.kernelspec import KernelSpecManager
            spec = KernelSpecManager().get_kernel_spec(name)
            exe = spec.argv[0]
            found = Path(exe).exists() or any((Path(p) / exe).exists() for p in os.get_exec_path())
            cache[name] = None if found else f"kernel '{name}' points at {exe}, which does not exist"
        except ImportError:
            cache[name] = "jupyter_client is not installed (run `make lab` once)"
        except Exception as e:   # NoSuchKernel and friends
            cache[name] = f"no kernel named '{name}' ({type(e).__name__})"
    return cache[name]


def cmd_doctor(args) -> int:
    problems = 0
    ok_python = sys.version_info >= (3, 11)
    problems += not ok_python
    print(f"Python      {platform.python_version()}  {'ok' if ok_python else 'too old: the course needs 3.11+'}")
    print(f"course_lib  {__version__}")
    for package in _PACKAGES + _TEST_PACKAGES:
        try:
            print(f"{package:<11} {metadata.version(package)}")
        except metadata.PackageNotFoundError:
            print(f"{package:<11} " + ("missing (run `make lab`, or `pip install -e '.[course]'`)"
                                      if package in _PACKAGES else "not installed (`make test` adds it)"))
    print()
    problems += _print_settings()
    if not (os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("OPENAI_API_KEY")):
        print("No API key: every notebook still runs, with scripted models and a local stand-in server.")
    print(_korean_font())
    print(*_tools(), sep="\n")
    print()
    problems += _check_model_ids()
    print()
    folder = _notebook_dir()
    if folder is None:
        print("Notebooks   not found (run `course doctor` from the course folder)")
        return 1 if problems else 0
    cache: dict = {}
    notebooks = sorted(folder.glob("*.ipynb"))
    if not notebooks:
        print("Notebooks   none yet in notebooks/")
    for nb in notebooks:
        try:
            name = json.loads(nb.read_text(encoding="utf-8"))["metadata"]["kernelspec"]["name"]
            problem = _kernel_problem(name, cache)
        except (OSError, ValueError, KeyError) as e:
            problem = f"cannot read its kernelspec ({type(e).__name__})"
        problems += problem is not None
        print(f"{nb.name:<32} {problem or 'kernel ok'}")
    return 1 if problems else 0


def _tools() -> list[str]:
    """The programs around Python that some commands use, and what a missing one means (none is needed to learn)."""
    import shutil

    from .sandbox import isolation
    sandbox = {"bubblewrap": "bubblewrap: `course check` grades each notebook isolated",
               "unshare": "unshare: `course check` isolates the network only (bubblewrap isolates files too)",
               "none": "none: `course check` grades with your network and files (bubblewrap, on Linux, isolates "
                       "them)"}[isolation()]
    return [("make        ok" if shutil.which("make") else "make        not found: the README's \"Without make\" "
             "gives the three commands `make lab` runs"), f"sandbox     {sandbox}",
            ("npm         ok (`make classroom` installs JupyterHub's proxy with it)" if shutil.which("npm") else
             "npm         not found: only `make classroom` needs it (it comes with Node.js)")]


def _korean_font() -> str:
    """Whether a font with Korean glyphs is installed; the lessons' Korean text shows as boxes without one."""
    import shutil
    import subprocess
    if shutil.which("fc-list") is None:   # macOS and Windows ship Korean fonts; Linux uses fontconfig
        return "Korean font cannot check (no fc-list); macOS and Windows include one"
    try:
        found = subprocess.run(["fc-list", ":lang=ko", "family"], capture_output=True, text=True,
                               timeout=20).stdout.split("\n")[0].split(",")[0].strip()
    except (OSError, subprocess.SubprocessError):
        found = ""
    if found:
        return f"Korean font {found}"
    return ("Korean font none found: Korean text in the lessons shows as boxes. Install one, e.g. "
            "`sudo apt-get install fonts-nanum` (or fonts-noto-cjk), then reload the browser tab")


def _check_model_ids() -> int:
    """Print each configured model ID and its lifecycle status; count a retired or soon-retiring one as a problem."""
    from ..models.catalog import model_id
    from .lifecycle import check_model
    problems = 0
    for provider in ("anthropic", "openai", "ollama"):
        model = model_id(provider)
        status = check_model(provider, model)   # asks the provider only when its API key is set; never raises
        problems += status.problem
        print(f"{provider + ' model':<22} {model}  {status.note}")
        if provider == "openai":   # the Responses API (openai-responses) takes the same ID and key
            print(f"{'openai-responses':<22} the same ID, through the Responses API")
    return problems


def _live_check(args) -> int:
    from .livecheck import cmd_live_check
    return cmd_live_check(args)


def cmd_check(args) -> int:
    from .grader import cmd_check as check
    return check(args)


def cmd_make_exercises(args) -> int:
    from .grading import make_exercises
    stale = make_exercises(check_only=args.check)
    verb = "out of date" if args.check else "written"
    for path in stale:
        print(f"{verb}: {path}")
    print(f"{len(stale)} exercise notebook(s) {verb}")
    return 1 if (args.check and stale) else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="course", description="Build an LLM Agent from Scratch: course tools.")
    parser.add_argument("--version", action="version", version=f"course {__version__}")
    sub = parser.add_subparsers(dest="command", required=True,
                                metavar="{demo,doctor,live-check,check,eval,make-exercises,mcp}")
    demo = sub.add_parser("demo", help="run the agent step by step: a scripted model (offline), or --model for a "
                                       "real one")
    demo.add_argument("goal", nargs="?", help=f"what to ask (default: {SCENARIOS['price']['goal']!r})")
    demo.add_argument("--model", choices=["scripted", *PROVIDERS], default="scripted",
                      help="scripted (default, offline) or a real model: needs its API key or a local Ollama")
    demo.add_argument("--max-steps", type=_positive_int, default=None,
                      help="step cap (default: COURSE_MAX_STEPS or 6)")
    demo.set_defaults(func=cmd_demo)
    doctor = sub.add_parser("doctor", help="check Python, packages, keys (set or not), settings, model IDs against "
                                           "their retirement dates, and notebook kernels")
    doctor.set_defaults(func=cmd_doctor)
    live = sub.add_parser("live-check", help="with a key (or Ollama running): check the real API works with the "
                                             "course's loop, in one short scenario (a few paid API calls)",
                          description="Runs one short scenario (parallel tool calls, a tool error, an answer) "
                                      "against the real API and reports what it did. Exit status: 0 compatible, "
                                      "1 something failed, 2 nothing to check (no key, no Ollama server).")
    live.add_argument("provider", nargs="?", default="all", choices=[*PROVIDERS, "all"],
                      help="which provider to check (default: all that are set up)")
    live.set_defaults(func=_live_check)
    check = sub.add_parser("check", help="grade exercise notebooks of a stage, each in a fresh sandboxed kernel",
                           description="Exit status: 0 every exercise passed, 1 some failed, 2 usage error, "
                                       "3 the grader itself failed.")
    check.add_argument("stage", type=_stage, help="the stage, for example 01 or 10")
    check.add_argument("notebooks", nargs="*", help="notebooks to grade (default: exercises/NN_*_exercises.ipynb)")
    check.add_argument("--json", action="store_true", help="print the results as JSON, for collecting")
    check.add_argument("--solutions", metavar="DIR", help="grade from the solution notebooks in DIR (kept outside "
                                                         "the learners' repository) instead of solutions/")
    check.add_argument("--timeout", type=_positive_int, default=60, metavar="SECONDS",
                       help="time limit per cell (default 60)")
    check.add_argument("--jobs", type=_positive_int, default=max(1, min(4, (os.cpu_count() or 2))), metavar="N",
                       help="notebooks graded at the same time (default: the number of cores, at most 4)")
    check.set_defaults(func=cmd_check)
    run = sub.add_parser("eval", help="run the task suite (stage 12) with a scripted stand-in or a real model",
                         description="Exit status: 0 the suite ran (or, with --compare, no regression), 1 a "
                                     "regression (a task of OLD missing from NEW is one), 2 a usage error (a bad "
                                     "option, a file it cannot use, no key or server for a real model), 130 "
                                     "interrupted (Ctrl-C): the runs shown are summarised, and saved with --out.")
    run.add_argument("--model", default="careful", choices=["careful", "sloppy", "looping", *PROVIDERS],
                     help="a scripted stand-in (careful, sloppy, looping: offline) or a real model (needs its key)")
    run.add_argument("--tasks", metavar="FILE", help="a task file (default: course_lib/data/eval_tasks.json)")
    run.add_argument("--jobs", type=_positive_int, default=1, metavar="N", help="runs at the same time (default 1)")
    run.add_argument("--repeat", type=_positive_int, default=1, metavar="K", help="runs per task, for pass^k")
    run.add_argument("--latency-ms", type=_whole, default=0, metavar="MS",
                     help="a simulated delay per model call, to see what --jobs buys")
    run.add_argument("--json", action="store_true", help="print only the summary (with --compare, the changes) as "
                                                          "JSON; progress goes to stderr")
    run.add_argument("--out", metavar="FILE", help="save every run (with its transcript) as JSON")
    run.add_argument("--compare", nargs=2, metavar=("OLD", "NEW"), help="compare two runs saved with --out: the "
                     "tasks whose share of passing runs changed, regressions first")
    run.set_defaults(func=cmd_eval, error=run.error)   # eval's own usage line above its errors
    make = sub.add_parser("make-exercises", help="generate exercises/ from solutions/")
    make.add_argument("--check", action="store_true", help="write nothing; fail if exercises/ is out of date")
    make.set_defaults(func=cmd_make_exercises)
    from .mcp_serve import add_parser   # stage 13 (issues 15, 26)
    add_parser(sub)
    return parser


def _stage(text: str) -> str:
    if not (text.isdigit() and 1 <= int(text) <= 99):
        raise argparse.ArgumentTypeError(f"expected a stage number such as 03, got {text!r}")
    return f"{int(text):02d}"


def _whole(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected a whole number of 0 or more, got {text!r}")
    return int(text)


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return int(text)


def main(argv: list[str] | None = None) -> int:
    if (sys.stdout.encoding or "").lower().replace("-", "") != "utf8":
        sys.stdout.reconfigure(errors="backslashreplace")   # Korean text must not crash a plain terminal
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and getattr(args, "notebooks", None) is not None and not any(e.startswith("-") for e in extra):
        args.notebooks += extra   # `course check 03 --json a.ipynb b.ipynb`: argparse stops at the option
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        return args.func(args)
    except ValueError as e:   # e.g. a bad COURSE_MAX_STEPS: one line, no traceback
        parser.error(str(e))
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
