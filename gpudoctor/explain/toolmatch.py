"""The ``tool.message`` diagnosis: a line that matches an unclassified template read from NVIDIA's binaries
(:mod:`gpudoctor.explain.toolwords` holds the templates and the matcher) becomes a low-confidence signature
that names the tool and its words. Kept apart from toolwords because it builds the KB's and the scanner's
types, and the KB loads toolwords' classified templates (one direction, no import circle)."""
from __future__ import annotations

from gpudoctor.explain.kb import Signature, Variant
from gpudoctor.explain.scan import Match
from gpudoctor.explain.toolwords import TOOL_MESSAGE, TOOL_SCORE, _source, load_generated, tool_said


def tool_signature(tool: str, binary: str):
    """The ``tool.message`` signature for one tool: its title names the tool and its message; its fixes
    say how to make that tool say more (classes.json ``more``), then ``gpudoctor check``."""
    more = [c for t in tool.split(" or ") for c in load_generated()["more"].get(t, [])]
    return Signature(
        TOOL_MESSAGE, "tool", "warn", "{tool} said: {message}",
        f"This message is one of the diagnostics compiled into {tool} ({binary}); no knowledge here says which part "
        "of the environment causes it, so it is the tool's own word, not a diagnosis.",
        "https://docs.nvidia.com/cuda/", (
            {"summary": "Make the tool say more where it failed:", "commands": more or ["gpudoctor check"]},
            {"summary": "Check the whole stack on the machine where it failed:", "commands": ["gpudoctor check"]}),
        (), {}, "kb/tools/generated.json")


def tool_matches(tail: bytes, first_line: int, skip_lines=frozenset(), skip_texts=frozenset()):
    """(signature, [Match]) for the unclassified templates matched in ``tail`` outside ``skip_lines``
    (numbers of lines another signature already explains) and ``skip_texts`` (their text: the scanner keeps
    only a signature's first matches, and a log repeats its lines), or None."""
    said = [s for s in tool_said(tail, first_line, limit=3 + len(skip_lines))
            if s["line_no"] not in skip_lines and s["line"] not in skip_texts][:3]
    if not said:
        return None
    sig = tool_signature(str(said[0]["tool"]), str(said[0]["from"][0]))
    out = []
    for s in said:
        var = Variant(f"{s['tool']} template", b"", b"", None, TOOL_SCORE,
                      f"{_source(load_generated(), list(s['tools']))} (generated from the {s['from'][0]} binary)")
        out.append(Match(sig, var, int(s["line_no"]), str(s["line"]),
                         {"tool": str(s["tool"]), "message": str(s["message"]), "template": str(s["template"]),
                          "binary": str(s["from"][0])}))
    return sig, out
