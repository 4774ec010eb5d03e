"""What to say when a local engine dies: the signal it died of and its likely cause.

Shared by the engine fixtures of the tests (which start the engine, so they know its exit status), ``pcfjudge bench
engine`` and ``pcfjudge eval`` (which only see the engine stop answering at ``--url`` / PCFJ_OPENAI_BASE_URL).
"""

from __future__ import annotations

import signal

UNREACHABLE = "cannot reach the"
"""How a backend's run error says the engine refused the connection (``backends`` ``ProviderError``)."""

CAUSES = {
    signal.SIGSEGV: (
        "a segmentation fault at the first inference is how a llama.cpp built with -march=native dies on a CPU "
        "whose AMX tiles (or AVX-512) the VM does not grant the process (SIGSEGV in ggml_backend_amx_mul_mat); "
        "build it portably as scripts/llama_flags.sh does (GGML_NATIVE=OFF, AVX2/FMA/F16C on, AMX off; "
        "docs/local-engines.md)"
    ),
    signal.SIGILL: (
        "an illegal instruction: the engine was built for a newer CPU than this one (e.g. AVX-512 or AMX copied from "
        "another machine); rebuild it here with scripts/llama_flags.sh's flags (docs/local-engines.md)"
    ),
    signal.SIGKILL: "killed from outside, most often by the kernel's out-of-memory killer (check dmesg)",
    signal.SIGBUS: "a bus error: usually the model file changed or was truncated while mapped",
    signal.SIGABRT: "it aborted: llama.cpp calls abort() on a failed assertion (GGML_ASSERT); its log says which",
}


def exit_cause(returncode: int) -> str:
    """``returncode`` (a subprocess's: -N for signal N; or a shell's 128 + N) as words: the signal and its cause."""
    number = -returncode if returncode < 0 else returncode - 128 if returncode > 128 else None
    if number is None:
        return f"it exited with status {returncode}; its log says why"
    try:
        sig = signal.Signals(number)
    except ValueError:
        return f"it died of signal {number}; its log says why"
    cause = CAUSES.get(sig, "its log says why")
    return f"it was killed by {sig.name} (exit status {returncode}): {cause}"


def unreachable(detail: str) -> bool:
    """Whether a failure's detail says the engine refused the connection."""
    return UNREACHABLE in detail


def engine_gone(url: str | None, detail: str) -> str:
    """The message when an engine that answered stops accepting connections mid-run."""
    where = f"at {url} " if url else ""
    return (
        f"the engine {where}stopped accepting connections ({detail}); it most likely died. Its log names the "
        f"signal; a SIGSEGV at its first inference is the llama.cpp -march=native/AMX fault ({CAUSES[signal.SIGSEGV]})"
    )
