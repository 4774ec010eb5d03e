"""HTTP models of ``POST /v1/chat/completions``: OpenAI's Chat Completions wire (the fields a judge call uses; others
an SDK or framework sends are ignored), plus the ``pcfjudge`` field of the answer (every order's verdict)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, model_validator

from pcfjudge.schemas.common import DEADLINE_MS, MODEL_OR_JURY, UsageOut

Role = Literal["system", "developer", "user", "assistant"]


class Lenient(BaseModel):
    """OpenAI's wire carries many fields a judge call does not use (``top_p``, ``user``, ``metadata``, …): they are
    accepted and ignored, so a framework's request is taken unchanged."""

    model_config = ConfigDict(extra="ignore")


class TextPart(Lenient):
    type: Literal["text"]
    text: str


class ChatMessage(Lenient):
    role: Role
    content: str | list[TextPart] | None = Field(default=None, description="Required, except on an assistant message.")
    name: str | None = None

    @model_validator(mode="after")
    def _has_content(self) -> ChatMessage:
        if self.content is None and self.role != "assistant":  # OpenAI's rule: only an assistant's may be null
            raise ValueError(f"a {self.role} message needs its content (text, or a list of text parts)")
        return self

    @property
    def text(self) -> str:
        if isinstance(self.content, list):
            return "".join(part.text for part in self.content)
        return self.content or ""


class StreamOptions(Lenient):
    include_usage: StrictBool = False


class ChatRequest(Lenient):
    model: str | list[str] | None = Field(default=None, description=MODEL_OR_JURY)
    messages: list[ChatMessage] = Field(min_length=1, description="The framework's judge prompt, unchanged.")
    temperature: StrictFloat | None = Field(
        default=None, ge=0, le=2, description="Sent to the judge (default: the server's)."
    )
    max_tokens: StrictInt | None = Field(
        default=None,
        ge=1,
        description="The judge's output cap, at most the server's PCFJ_MAX_OUTPUT_TOKENS (default: that).",
    )
    max_completion_tokens: StrictInt | None = Field(default=None, ge=1, description="max_tokens under its newer name.")
    seed: StrictInt | None = Field(default=None, description="Sent to the judge; part of the cache key.")
    n: StrictInt = Field(default=1, ge=1, description="Choices: 1 (the consensus is one answer).")
    stream: StrictBool = Field(
        default=False, description="Answer in chat.completion.chunk events once the consensus is formed."
    )
    stream_options: StreamOptions | None = None
    response_format: dict[str, Any] | None = Field(default=None, description="Sent to the judge as it is.")
    logprobs: StrictBool | None = Field(
        default=None, description="AlpacaEval's m/M prompt: log-probabilities of m and M from the orders' agreement."
    )
    top_logprobs: StrictInt | None = Field(default=None, ge=0, le=20)
    deadline_ms: StrictInt | None = Field(
        default=None, ge=1, le=86_400_000, description=f"pcfjudge's own field (not OpenAI's). {DEADLINE_MS}"
    )


class OrderOut(BaseModel):
    order: list[str] = Field(description="The caller's labels in the order this call showed them.")
    model: str
    verdict: str | None = Field(description="This order's verdict in the caller's labels (e.g. A>B); null: failed.")
    shown: str | None = Field(description="The verdict as the judge gave it, in the labels it saw.")
    cached: bool
    latency_ms: float
    error: str | None
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0


class ChatJudgment(BaseModel):
    template: str | None = Field(description="The recognised template (null: passed through as one call).")
    framework: str | None
    source: str | None = Field(description="Where the template's prompt and parser come from.")
    verdict: str | None = Field(description="The consensus in the caller's labels (e.g. A>B, A=B, B>A=C).")
    agreement: float | None = Field(description="Share of orders whose verdict has the consensus's direction.")
    split: bool = Field(description="The orders disagreed (the verdict followed the position).")
    coin: bool = Field(description="A split the template has no tie for, settled by an order-free coin.")
    reply: Literal["judge", "template"] | None = Field(
        description="judge: the content is the judge's own answer, relabelled; template: the template's wording."
    )
    orders: list[OrderOut]
    usage: UsageOut
    degraded: bool = Field(description="An order failed: the verdict is the others'.")
    stopped: Literal["deadline"] | None = Field(
        default=None, description="deadline: the caller's deadline cut an order (the verdict is the others')."
    )


class AssistantMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str


class TopLogprob(BaseModel):
    token: str
    logprob: float
    bytes: list[int]


class TokenLogprob(TopLogprob):
    top_logprobs: list[TopLogprob]


class ChoiceLogprobs(BaseModel):
    content: list[TokenLogprob]


class Choice(BaseModel):
    index: int = 0
    message: AssistantMessage
    finish_reason: Literal["stop"] = "stop"
    logprobs: ChoiceLogprobs | None = None


class CompletionUsage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class ChatCompletion(BaseModel):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[Choice]
    usage: CompletionUsage = Field(description="Every call's tokens together (cache hits spend none).")
    pcfjudge: ChatJudgment


class OpenAIErrorDetail(BaseModel):
    message: str = Field(description="What went wrong and how to fix it.")
    type: str = Field(
        description="OpenAI's error type: invalid_request_error, authentication_error, rate_limit_error, server_error."
    )
    param: str | None = Field(default=None, description="The request field at fault, when one is.")
    code: str | None = Field(default=None, description="The service's error kind, e.g. validation_error, over_limit.")


class OpenAIError(BaseModel):
    """Every error of the chat door in OpenAI's shape, so an OpenAI client's exception carries its message."""

    error: OpenAIErrorDetail
