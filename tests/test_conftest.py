"""conftest.py's one retry: a notebook kernel that dies while starting is started again, at most 3 tries."""
import pytest

import conftest


def test_a_kernel_that_dies_at_start_is_started_again_up_to_three_times(monkeypatch):
    import nbval.kernel
    calls = []

    def dies_twice(*args, **kwargs):
        calls.append(args)
        if len(calls) < 3:
            raise RuntimeError("Kernel died before replying to kernel_info")
        return "manager", "client"

    monkeypatch.setattr(conftest, "_start_kernel", dies_twice)
    assert nbval.kernel.start_new_kernel(kernel_name="python3") == ("manager", "client") and len(calls) == 3
    calls.clear()
    monkeypatch.setattr(conftest, "_start_kernel", lambda *a, **k: calls.append(a) or (_ for _ in ()).throw(
        RuntimeError("Kernel died before replying to kernel_info")))
    with pytest.raises(RuntimeError, match="Kernel died"):
        nbval.kernel.start_new_kernel()
    assert len(calls) == 3
