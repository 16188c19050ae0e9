"""Make-rule dependency lists (nvcc -M, gcc -M): real nvcc output and the format's escapes."""
import shutil
import subprocess

import pytest

from gpudoctor.formats.make_deps import MakeDepsError, parse_make_deps


def test_escapes_continuations_duplicates_and_phony_rules():
    text = "obj/a.o : src/a.cu \\\n  inc/with\\ space.h \\\r\n  /usr/include/x.h inc/with\\ space.h cost$$.h\ninc/with\\ space.h:\n"
    assert parse_make_deps(text) == ["src/a.cu", "inc/with space.h", "/usr/include/x.h", "cost$.h"]
    assert parse_make_deps("a.o:\n") == []


@pytest.mark.parametrize("bad", ["", "no rule here\n", "VAR := value\n"])
def test_text_without_a_rule_is_an_error(bad):
    with pytest.raises(MakeDepsError):
        parse_make_deps(bad)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc on PATH")
def test_real_nvcc_lists_the_source_and_the_cuda_headers(tmp_path):
    from gpudoctor.probes.smoke_nvcc import SOURCE

    out = subprocess.run(["nvcc", "-M", SOURCE], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    deps = parse_make_deps(out.stdout)
    assert deps[0] == SOURCE and any(d.endswith("/cuda_runtime.h") for d in deps) and len(deps) == len(set(deps))
