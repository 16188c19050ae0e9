"""The tools' own words (issue 24 item 1): diagnostic templates read out of NVIDIA's binaries
(kb/tools/generated.json, scripts/gen_tool_messages.py), each a linear regex, classified by the hand-kept
families of kb/tools/classes.json or recognised as the tool's word (tool.message, low confidence).

The committed data is checked without the binaries; where a real NVIDIA tool is installed (Debian's CUDA
11.8 from .ci/install-real-parts, or /usr/local/cuda), its real failure output goes through explain."""
import ctypes.util
import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from re import _constants as C, _parser

import pytest

from gpudoctor.explain import toolwords as tw
from gpudoctor.explain.diagnose import NOT_ENV_MAX, diagnose_text
from gpudoctor.explain.evaluate import CONFIDENT
from gpudoctor.explain.kb import load_kb

ROOT = Path(__file__).resolve().parent.parent
TOOLS = ROOT / "gpudoctor" / "explain" / "kb" / "tools"
GENERATED = json.loads((TOOLS / "generated.json").read_text())
CLASSIFIED = json.loads((TOOLS / "classified.json").read_text())
FAMILIES = json.loads((TOOLS / "classes.json").read_text())["families"]
KB = load_kb()
KB_IDS = {s.id for s in KB}


def _gen_module():
    spec = importlib.util.spec_from_file_location("gen_tool_messages", ROOT / "scripts" / "gen_tool_messages.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_SAMPLE = {"q": '"x_val"', "d": "42", "i": "42", "u": "42", "x": "2a", "X": "2A", "f": "1.5", "g": "1.5", "e": "1.5",
           "c": "z", "p": "0x7f00"}


def instantiate(template: str, dialect: str = "printf") -> str:
    """The template as the tool would print it with sample values."""
    def one(m):
        spec = m.group()
        if spec == "%%":
            return "%"
        if spec.rstrip("0123456789").endswith("q"):
            return _SAMPLE["q"]
        conv = spec.rstrip("0123456789")[-1]
        if dialect == "edg" and spec.startswith(("%s", "%n", "%t", "%p")):  # EDG: a string, entity, type, position
            return "x_val"
        return _SAMPLE.get(conv, "x_val")
    return tw._SPECS[dialect].sub(one, template)


# ----------------------------------------------------------------------------- the committed data


def test_every_message_names_its_binaries_and_is_complete():
    binaries = {f"{b['binary']} {b['version']}" for b in GENERATED["binaries"]}
    tools = {b["tool"] for b in GENERATED["binaries"]}
    # the brief's ten tools, from real binaries of real releases
    assert tools >= {"nvcc", "cudafe++", "cicc", "ptxas", "nvlink", "fatbinary", "libcuda", "libnvidia-ml", "libnccl",
                     "TensorRT"}, tools
    assert {b["version"] for b in GENERATED["binaries"] if b["tool"] == "nvcc"} >= {"11.8.89", "13.0.88"}
    assert len(GENERATED["messages"]) > 5000
    for m in GENERATED["messages"]:
        assert m["tools"] and set(m["tools"]) <= tools, m
        assert m["from"] and set(m["from"]) <= binaries, m
        assert m["class"] is None or m["class"] in KB_IDS, m
        assert m["class"] is None or 0 < m["weight"] <= 1, m
        lit = m["literal"]
        assert lit == lit.lower() and lit in m["template"].lower() and set(lit.encode()) <= tw._LITERAL_BYTES, m


def test_classified_json_is_the_classified_part_of_generated_json():
    assert CLASSIFIED["messages"] == [m for m in GENERATED["messages"] if m["class"]]


def test_templates_of_the_error_enumerations_and_the_c_library_are_left_to_them():
    # libnccl and TensorRT link the CUDA runtime statically: its messages are the enumeration's knowledge
    templates = {m["template"].lower().rstrip(". ") for m in GENERATED["messages"]}
    assert "no cuda-capable device is detected" not in templates
    assert "no such file or directory" not in {re.sub(r"%\w+", "", t).strip(" :") for t in templates}


# ----------------------------------------------------------------------------- regexes: right and linear


def _repeats(tree, inside_lookahead=False):
    for op, av in tree:
        if op in (C.MAX_REPEAT, C.MIN_REPEAT):
            yield op, av[1], inside_lookahead
            yield from _repeats(av[2], inside_lookahead)
        elif op == C.SUBPATTERN:
            yield from _repeats(av[3], inside_lookahead)
        elif op == C.ASSERT:
            yield from _repeats(av[1], True)
        elif op == C.BRANCH:
            for alt in av[1]:
                yield from _repeats(alt, inside_lookahead)


def test_every_template_regex_is_bounded_and_commits_each_lazy_gap():
    # Linear by construction: every repeat has a bound, and a lazy "any text" gap only ever sits in a
    # lookahead, which Python's re never re-enters (an atomic step), so no gap retries another's choices.
    bad = []
    for m in GENERATED["messages"]:
        for op, hi, in_lookahead in _repeats(_parser.parse(m["regex"], re.IGNORECASE)):
            if hi == C.MAXREPEAT or hi > 512 or (op == C.MIN_REPEAT and not in_lookahead):
                bad.append(m["regex"])
    assert not bad, bad[:5]


def test_the_kb_linearity_lint_passes_on_every_template_regex():
    spec = importlib.util.spec_from_file_location("kb_linear", ROOT / "tests" / "test_explain_kb_linear.py")
    lint = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(lint)
    bad = [(m["regex"], shape) for m in GENERATED["messages"] for shape in lint._quadratic_shapes(m["regex"])]
    assert not bad, bad[:5]


def test_every_template_regex_matches_its_message_as_the_tool_prints_it():
    missed = []
    for m in GENERATED["messages"]:
        dialect = "edg" if m["tools"] == ["cudafe++"] else "printf"
        line = instantiate(m["template"], dialect)
        if not re.search(m["regex"], line, re.IGNORECASE) or m["literal"] not in line.lower():
            missed.append((m["template"], line))
    # EDG templates that cicc holds too are read as printf: a handful; every other one must match
    assert len(missed) <= 0.01 * len(GENERATED["messages"]), missed[:10]


def test_a_gap_commits_to_the_first_place_its_next_text_follows():
    rx = tw.template_regex("Unresolved extern %s '%s'")
    assert re.search(rx, "ptxas fatal   : Unresolved extern function '_Z3foov'")
    assert tw.template_regex("Value '%s' is not defined for option '%s'") == \
        "Value\\ '[^'\\n]{0,256}'\\ is\\ not\\ defined\\ for\\ option\\ '[^'\\n]{0,256}'"
    assert tw.template_regex("%s: %d") is None  # no constant words: it could be anything's


# ----------------------------------------------------------------------------- classification


def test_every_family_names_a_kb_class_and_a_reason_and_classifies_something():
    used = {m["family"] for m in GENERATED["messages"] if m["family"]}
    for fam in FAMILIES:
        assert fam.get("reason") and ("prefix" in fam) != ("phrase" in fam), fam
        assert fam["class"] is None or (fam["class"] in KB_IDS and 0 < fam["weight"] <= 1), fam
        assert fam["name"] in used, f"family {fam['name']!r} matches no template of the binaries read"


@pytest.mark.parametrize("message", CLASSIFIED["messages"], ids=lambda m: m["template"][:60])
def test_a_classified_message_is_diagnosed_as_its_class(message):
    # the families and the hand-written signatures agree: the message, as the tool prints it, gives its class first
    line = instantiate(message["template"])
    diags = diagnose_text(line + "\n", KB)
    assert diags and diags[0].finding.id == message["class"], (line, [(d.finding.id, d.score) for d in diags[:3]])
    assert diags[0].score < CONFIDENT or message["weight"] >= CONFIDENT  # no message is more sure than its family says


def test_unclassified_messages_name_the_tool_never_a_cause():
    line = "node7:4051:4100 [3] NCCL WARN Mismatched NCCL version detected : rank 0 version 22105 rank 3 version 21803"
    diags = diagnose_text("step 10\n" + line + "\n", KB)
    assert [d.finding.id for d in diags] == ["tool.message"]
    d = diags[0]
    assert d.score == tw.TOOL_SCORE and d.score < CONFIDENT
    assert d.finding.title == "libnccl said: Mismatched NCCL version detected : rank 0 version 22105 rank 3 version 21803"
    assert d.finding.evidence["binary"].startswith("libnccl.so.2 ")
    assert any("NCCL_DEBUG=INFO" in c for f in d.finding.fixes for c in f.commands)
    assert d.matches[0].line_no == 2


def test_a_classified_message_is_attributed_to_the_tool_the_line_names():
    line = ("nvlink error   : Version mismatch for device code binary for cuda source file 'a.cu'; found version=118, "
            "current version=130")
    d = diagnose_text(line + "\n", KB)[0]
    assert d.finding.id == "toolkit.mixed" and d.finding.evidence["tool"] == "nvlink"  # the template: nvlink or libcuda
    assert d.finding.evidence["tool_template"].startswith("Version mismatch for device code binary")


def test_toolwords_log_patterns_stay_linear():
    spec = importlib.util.spec_from_file_location("kb_linear", ROOT / "tests" / "test_explain_kb_linear.py")
    lint = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(lint)
    patterns = [tw._PREFIX] + [re.compile(rf"(?<![\w+-]){re.escape(t)}(?![\w+-])") for t in ("cudafe++", "ptxas")]
    assert not [(p.pattern, shape) for p in patterns for shape in lint._quadratic_shapes(p.pattern)]


def test_nccl_names_its_bootstrap_failure_after_the_code_it_returns():
    log = ("h100:2231:2231 [0] NCCL WARN Bootstrap : no socket interface found\n"
           "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, internal error - please "
           "report this issue to the NCCL developers, NCCL version 2.21.5\n")
    diags = diagnose_text(log, KB)
    assert diags[-1].finding.id == "tool.message" and diags[-1].matches[0].line_no == 1
    assert diags[-1].finding.title == "libnccl said: Bootstrap : no socket interface found"


def test_a_tool_message_never_outranks_a_diagnosis_or_a_hint():
    log = ("nvcc fatal   : Unknown option '--foo'\n"
           "CUDA driver version is insufficient for CUDA runtime version\n")
    ids = [d.finding.id for d in diagnose_text(log, KB)]
    assert ids[0] == "driver.too_old" and ids[-1] == "tool.message"
    # a line a signature explains is not repeated as a tool's word
    assert [d.finding.id for d in diagnose_text("nvcc fatal   : Unsupported gpu architecture 'compute_35'\n", KB)] == \
        ["arch.toolkit_unsupported"]


def test_a_short_template_counts_only_behind_the_tools_own_name():
    assert [d.finding.id for d in diagnose_text("nvcc fatal   : Unknown option '--foo'\n", KB)] == ["tool.message"]
    assert diagnose_text("my_script.py: Unknown option '--foo'\n", KB) == []


def test_a_template_inside_another_programs_sentence_is_not_the_tools_word():
    # cudafe++ holds "could not be found"; Windows' loader says "The specified module could not be found."
    assert not tw.tool_said(b"    The specified module could not be found.\n", 1)
    said = tw.tool_said(b"h:1:2 [0] NCCL WARN Bootstrap : no socket interface found\n", 1)
    assert [s["tool"] for s in said] == ["libnccl"]  # after a level word it starts the message


def test_the_strings_of_statically_linked_libraries_are_theirs():
    # ptxas 13.5 links OpenSSL: its reason strings that this machine's libcrypto also holds are left out
    assert "left_to_linked_libraries" in GENERATED and "libcrypto.so.3" in GENERATED["left_to_linked_libraries"]
    assert not [m for m in GENERATED["messages"] if m["template"] in ("%s:%d: OpenSSL internal error: %s",
                                                                      "%s: HTTP CONNECT failed, non-HTTP response")]


def test_without_the_automaton_the_tail_reads_the_same(monkeypatch):
    tail = (b"ptxas fatal   : Unresolved extern function 'a'\nstep 3\nptxas fatal   : Unresolved extern function 'b'\n"
            b"nvcc fatal   : Unknown option '--foo'\n")
    with_automaton = tw.tool_said(tail, 1, limit=5)
    monkeypatch.setattr(tw, "_tail_automaton", lambda: None)
    assert tw.tool_said(tail, 1, limit=5) == with_automaton and [s["line_no"] for s in with_automaton] == [1, 3, 4]


def test_program_errors_stay_low():
    line = "[E] [TRT] Called with invalid tensor_name parameter (nullptr)."
    d = diagnose_text(line + "\n", KB)[0]
    assert d.finding.id == "program.error" and d.score <= NOT_ENV_MAX


def test_the_tool_messages_keep_the_scanner_within_its_byte_classes():
    from gpudoctor.explain.scan import LITERAL_BYTE_CLASSES_MAX, Scanner, literal_byte_classes

    literals = Scanner(KB)._literals
    assert any(v.vars.get("tool_template") for s in KB for v in s.variants)
    assert literal_byte_classes(literals) <= LITERAL_BYTE_CLASSES_MAX


# ----------------------------------------------------------------------------- the generator on real files


def test_rodata_strings_reads_a_real_elf_and_refuses_what_is_not_one(tmp_path):
    gen = _gen_module()
    libc = ctypes.util.find_library("c")
    path = next((p for p in (f"/lib/x86_64-linux-gnu/{libc}", f"/usr/lib64/{libc}", f"/lib64/{libc}") if Path(p).is_file()), None)
    if path is None:
        pytest.skip("no libc file found")
    strings = set(gen.rodata_strings(Path(path)))
    assert "No such file or directory" in strings  # strerror's table lives in libc's .rodata
    fake = tmp_path / "FAKE-lfs-pointer.so"
    fake.write_text("version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 1\n")
    with pytest.raises(ValueError, match="not a little-endian ELF64"):
        list(gen.rodata_strings(fake))


def test_which_strings_are_diagnostics():
    gen = _gen_module()
    assert gen.is_diagnostic("Unsupported gpu architecture '%s'")
    assert gen.is_diagnostic("Mismatched NCCL version detected : rank %d version %d rank %d version %d")
    assert not gen.is_diagnostic("Wno-deprecated-gpu-targets")  # an option name
    assert not gen.is_diagnostic("PeakOCGMemoryUsage              : %.3lf KB")  # statistics
    assert not gen.is_diagnostic("Specify the name of the class of NVIDIA 'virtual' GPU architecture for which the "
                                 "CUDA input files must be compiled. With the exception as described for the shorthand "
                                 "below, the architecture specified with this option must be a 'virtual' architecture")


def _ptxas():
    for p in ("/usr/lib/nvidia-cuda-toolkit/bin/ptxas", "/usr/bin/ptxas", "/usr/local/cuda/bin/ptxas", shutil.which("ptxas")):
        if p and Path(p).is_file():
            return p
    return None


def test_a_real_ptxas_failure_is_attributed_to_ptxas(tmp_path):
    ptxas = _ptxas()
    if ptxas is None:
        pytest.skip("no ptxas installed (.ci/install-real-parts installs Debian's CUDA 11.8)")
    ptx = tmp_path / "k.ptx"
    ptx.write_text(".version 7.0\n.target sm_70\n.address_size 64\n.extern .func foo();\n"
                   ".visible .entry k() { call foo; ret; }\n")
    r = subprocess.run([ptxas, "-arch=sm_70", str(ptx), "-o", str(tmp_path / "k.cubin")], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode != 0 and "Unresolved extern function" in r.stderr, r.stderr
    diags = diagnose_text(r.stderr, KB)
    assert [d.finding.id for d in diags] == ["tool.message"], [(d.finding.id, d.finding.title) for d in diags]
    assert diags[0].finding.title == "ptxas said: Unresolved extern function 'foo'"
    assert diags[0].finding.evidence["template"] == "Unresolved extern %s '%s'"


def test_a_real_nvcc_refusing_an_option_is_attributed_to_nvcc(tmp_path):
    nvcc = next((p for p in ("/usr/bin/nvcc", "/usr/local/cuda/bin/nvcc") if Path(p).is_file()), None)
    if nvcc is None:
        pytest.skip("no nvcc installed")
    src = tmp_path / "x.cu"
    src.write_text("__global__ void k() {}\n")
    r = subprocess.run([nvcc, "--no-such-flag", "-c", str(src)], capture_output=True, text=True, timeout=60,
                       cwd=tmp_path)
    assert r.returncode != 0, r.stderr
    d = diagnose_text(r.stderr, KB)[-1]
    assert d.finding.id == "tool.message" and d.finding.title.startswith("nvcc said: Unknown option"), d.finding.title


def test_the_generator_check_mode_reports_a_stale_file(tmp_path, monkeypatch):
    # --check compares with what would be written; with a changed classes.json nothing may pass silently
    gen = _gen_module()
    out = tmp_path / "kb" / "tools"
    out.mkdir(parents=True)
    (tmp_path / "kb" / "codes").mkdir()
    monkeypatch.setattr(gen, "OUT_DIR", out)
    (out / "classes.json").write_text((TOOLS / "classes.json").read_text())
    (tmp_path / "kb" / "codes" / "generated.json").write_text(
        (ROOT / "gpudoctor" / "explain" / "kb" / "codes" / "generated.json").read_text())
    monkeypatch.setattr(gen, "binaries", lambda nccl: [("ptxas", "0.0", "FAKE", Path(_ptxas()))] if _ptxas() else [])
    assert gen.main(["--check"]) == 1  # nothing written yet
    assert gen.main([]) == 0
    assert gen.main(["--check"]) == 0
    data = json.loads((out / "generated.json").read_text())
    if _ptxas():
        assert any(m["template"] == "Unresolved extern %s '%s'" for m in data["messages"])
