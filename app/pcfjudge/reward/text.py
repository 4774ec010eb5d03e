"""Text the trainers send, made readable for the judge (standard library only: the integrations use it too).

* ``chat_text``: a prompt given as chat messages (slime, TRL's conversational format) as one text: the content
  alone for a single user message, else ``role: content`` paragraphs. List contents (multimodal parts) keep their
  text parts.
* ``strip_end_tokens``: OpenRLHF decodes prompt + response with special tokens kept, so a response ends with the
  tokenizer's end-of-sequence marker; the judge should not see it (nor should two otherwise equal responses differ
  by it). Only these well-known end markers are removed, and only at the very end.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

END_TOKENS = (
    "<|im_end|>",
    "<|endoftext|>",
    "<|eot_id|>",
    "<|end_of_text|>",
    "<|end|>",
    "<|return|>",
    "</s>",
    "<end_of_turn>",
    "<eos>",
    "<｜end▁of▁sentence｜>",
)


def content_text(content: Any) -> str:
    """A message's content as text: a string as is; a list of parts joined by their text (other parts dropped)."""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        texts = [p.get("text", "") if isinstance(p, Mapping) else str(p) for p in content]
        return "\n".join(t for t in texts if isinstance(t, str) and t)
    return "" if content is None else str(content)


def chat_text(prompt: str | Sequence[Mapping[str, Any]]) -> str:
    """The prompt as one text (see the module docstring)."""
    if isinstance(prompt, str):
        return prompt
    messages = [(str(m.get("role", "user")), content_text(m.get("content"))) for m in prompt]
    if len(messages) == 1 and messages[0][0] == "user":
        return messages[0][1]
    return "\n\n".join(f"{role}: {text}" for role, text in messages)


def strip_end_tokens(text: str) -> str:
    """``text`` without trailing end-of-sequence markers (and the whitespace around them)."""
    stripped = text.rstrip()
    while True:
        for token in END_TOKENS:
            if stripped.endswith(token):
                stripped = stripped[: -len(token)].rstrip()
                break
        else:
            return stripped if stripped != text.rstrip() else text
