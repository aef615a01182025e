"""`flowc.runtime`'s exported names, imported on first use (PEP 562)."""

from __future__ import annotations

import subprocess
import sys

import flowc.runtime


def test_every_exported_name_resolves_to_its_definition() -> None:
    for name in flowc.runtime.__all__:
        value = getattr(flowc.runtime, name)
        # Classes and functions say where they are defined (constants and aliases do not).
        home = getattr(value, "__module__", "")
        if home.startswith("flowc.runtime."):
            assert value is getattr(sys.modules[home], name), name
    assert set(flowc.runtime.__all__) <= set(dir(flowc.runtime))


def test_star_import_and_submodule_imports_still_work() -> None:
    code = (
        "from flowc.runtime import *\n"
        "from flowc.runtime import model, rejections as R\n"
        "print(Machine.__name__, Instance.__name__, FakeClock.__name__, model.IR_VERSION"
        " == IR_VERSION, R.Rejected is Rejected, __version__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["Machine", "Instance", "FakeClock", "True", "True", "0.1.0"]


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        flowc.runtime.NoSuchThing  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as error:
        assert "NoSuchThing" in str(error)
    else:
        raise AssertionError("expected an AttributeError")


def test_the_model_alone_does_not_load_the_machine() -> None:
    """The compiler imports the IR model; the machine, instances and Jinja2 stay unloaded."""
    code = (
        "import sys, flowc.runtime.model\n"
        "print(sorted(m for m in ('jinja2', 'flowc.runtime.machine', 'flowc.runtime.instance')"
        " if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
