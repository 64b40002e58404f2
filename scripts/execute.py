"""Re-record notebook outputs the way CI checks them: `make execute` (all lessons) or
`python scripts/execute.py notebooks/03_describing_tools.ipynb`.

Each notebook runs top to bottom in a fresh `python3` kernel of this environment, in its own folder, with
PYTHONHASHSEED=0 and no API keys or base URLs in the environment (so the recorded outputs are the offline
ones CI compares against). Volatile metadata is dropped so a re-run changes nothing when nothing changed,
and the kernel's language_info is kept so that opening a lesson in JupyterLab changes nothing either.
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parent.parent
OFFLINE_UNSET = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL",
                 "COURSE_MAX_STEPS", "COURSE_LIVE", "COURSE_ANTHROPIC_MODEL", "COURSE_OPENAI_MODEL",
                 "COURSE_OLLAMA_MODEL")
KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
LANGUAGE_INFO = {"codemirror_mode": {"name": "ipython", "version": 3}, "file_extension": ".py",   # ipykernel's
                 "mimetype": "text/x-python", "name": "python", "nbconvert_exporter": "python",
                 "pygments_lexer": "ipython3", "version": ".".join(map(str, sys.version_info[:3]))}


def offline_env() -> None:
    os.environ["PYTHONHASHSEED"] = "0"
    os.environ["COURSE_APPROVAL"] = "deny"   # recorded outputs show the non-interactive path, as CI runs it
    for key in OFFLINE_UNSET:
        os.environ.pop(key, None)


def tidy(nb) -> None:
    """Keep only what a reader needs: no timings, no widget state (its model ids are random on every run;
    running the cell shows the widget again). ``language_info`` stays as the kernel reported it, Python's
    version included: JupyterLab writes exactly that when it opens a notebook, so opening and closing a
    lesson changes nothing and asks nothing (on another Python version it updates that one line)."""
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.metadata.pop("widgets", None)
    nb.metadata["language_info"] = {**LANGUAGE_INFO, **nb.metadata.get("language_info", {})}
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        cell.metadata.pop("collapsed", None)
        if cell.cell_type == "code":
            for output in cell.outputs:
                output.get("metadata", {}).pop("execution", None)
                # A widget's saved view names a random model id and cannot show without the kernel anyway;
                # the text form (e.g. "AgentStepper(step 0/6, ...)") stays, and running the cell shows the widget.
                output.get("data", {}).pop("application/vnd.jupyter.widget-view+json", None)
            cell.outputs = merge_streams(cell.outputs)


def merge_streams(outputs: list) -> list:
    """Join neighbouring prints to one stream: where the kernel splits them varies from run to run."""
    merged = []
    for output in outputs:
        previous = merged[-1] if merged else None
        if (output.get("output_type") == "stream" and previous is not None
                and previous.get("output_type") == "stream" and previous.get("name") == output.get("name")):
            previous["text"] += output["text"]
        else:
            merged.append(output)
    return merged


def execute(path: Path) -> bool:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, kernel_name="python3", timeout=300, record_timing=False,
                            resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    try:
        client.execute()
    except CellExecutionError as e:
        print(f"FAILED  {path.relative_to(ROOT)}\n{e}", file=sys.stderr)
        return False
    tidy(nb)
    nbformat.write(nb, path)
    print(f"ok      {path.relative_to(ROOT)}  ({time.perf_counter() - start:.1f} s)")
    return True


def main(argv: list[str]) -> int:
    offline_env()
    paths = [Path(a).resolve() for a in argv] or (sorted((ROOT / "notebooks").glob("[0-9][0-9]*_*.ipynb"))
                                                   + sorted((ROOT / "solutions").glob("[0-9][0-9]*_*.ipynb")))
    failed = [p for p in paths if not execute(p)]
    if failed:
        print(f"{len(failed)} notebook(s) failed: {', '.join(p.name for p in failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
