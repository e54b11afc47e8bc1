import importlib
import pkgutil

import seenbefore


def test_all_names_exist_and_are_sorted() -> None:
    for name in seenbefore.__all__:
        assert hasattr(seenbefore, name), name
    assert len(set(seenbefore.__all__)) == len(seenbefore.__all__)


def test_core_imports_no_heavy_library() -> None:
    import subprocess
    import sys

    code = (
        "import sys, seenbefore.core as c, pkgutil, importlib\n"
        "for m in pkgutil.iter_modules(c.__path__):\n"
        "    importlib.import_module('seenbefore.core.' + m.name)\n"
        "heavy = {'sklearn', 'torch', 'sentence_transformers', 'scipy', 'yaml', 'pydantic'}\n"
        "print(sorted(heavy & {n.split('.')[0] for n in sys.modules}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_every_module_imports() -> None:
    for info in pkgutil.walk_packages(seenbefore.__path__, "seenbefore."):
        if info.name != "seenbefore.__main__":
            importlib.import_module(info.name)
